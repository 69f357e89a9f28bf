//===- ignc.cpp - the ignc executable -------------------------------------===//

#include "IgncMain.h"

int main(int argc, char **argv) { return ign::igncMain(argc, argv); }
