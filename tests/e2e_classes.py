#!/usr/bin/env python3
"""Lists the test classes of an end-to-end test module, one a line, for
tests/e2e.cmake, which makes one ctest test of each (so that ctest can run the
classes of a module beside each other and report each one's time).

    python3 tests/e2e_classes.py DIR MODULE

Imports DIR/MODULE.py as unittest would (its module-level code is definitions
only; setUpModule does not run) and prints the class of every test its loader
finds, in the loader's order: exactly the classes `python3 -m unittest MODULE`
runs, inherited test methods included. Exits 1, naming the module, if the
import fails: a module that cannot be listed must fail the configure, not
drop its tests.
"""
import os
import sys
import unittest


def classes(suite, out):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            classes(t, out)
        else:
            name = type(t).__name__
            if name not in out:
                out.append(name)
    return out


def main():
    folder, module = sys.argv[1], sys.argv[2]
    sys.path.insert(0, folder)
    sys.dont_write_bytecode = True
    try:
        suite = unittest.defaultTestLoader.loadTestsFromName(module)
    except Exception as e:  # noqa: BLE001 - any import failure ends the listing
        print(f"e2e_classes.py: cannot import {folder}/{module}.py: {e!r}", file=sys.stderr)
        return 1
    found = classes(suite, [])
    if not found or "_FailedTest" in found:
        print(f"e2e_classes.py: {folder}/{module}.py: no test classes could be loaded", file=sys.stderr)
        return 1
    print("\n".join(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
