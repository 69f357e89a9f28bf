#!/usr/bin/env python3
"""kill_tuning.py DB -- IGNC ARGS...: starts a tuning run, SIGKILLs it once
the database holds at least 3 records, then checks that the database is
intact (PRAGMA integrity_check) and prints its record count."""
import os
import signal
import sqlite3
import subprocess
import sys
import time


def count(db):
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute("select count(*) from records").fetchone()[0]
    except sqlite3.Error:
        return 0


def main():
    db, args = sys.argv[1], sys.argv[3:]
    proc = subprocess.Popen(args)
    deadline = time.time() + 300
    while count(db) < 3:
        if proc.poll() is not None:
            print("the tuning run ended before it could be killed")
            return 1
        if time.time() > deadline:
            proc.kill()
            print("no records after 300 s")
            return 1
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    with sqlite3.connect(db) as c:
        check = c.execute("pragma integrity_check").fetchone()[0]
        n = c.execute("select count(*) from records").fetchone()[0]
    print("integrity:", check)
    print("records after kill:", n)
    return 0 if check == "ok" and n >= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
