//===- IgncMain.h - the ignc command line as a function ---------*- C++ -*-===//

#ifndef IGN_TOOLS_IGNC_IGNCMAIN_H
#define IGN_TOOLS_IGNC_IGNCMAIN_H

namespace ign {

/// ignc's command line: parses argv and runs the command (the registered
/// targets' subcommands included); returns the exit code.
int igncMain(int argc, char **argv);

} // namespace ign

#endif // IGN_TOOLS_IGNC_IGNCMAIN_H
