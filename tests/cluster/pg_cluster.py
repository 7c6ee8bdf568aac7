#!/usr/bin/env python3
"""A PostgreSQL server of its own for zkfarm's tests: Debian's binaries
(postgresql-15, installed by scripts/setup.sh), a fresh cluster in a temporary
folder (initdb), its own port on 127.0.0.1 and its own socket folder, run as an
unprivileged user (initdb and postgres refuse root; `nobody` when the tests run
as root), password authentication (scram-sha-256).

    pg_cluster.py start DIR     initdb and start; DIR/url holds the connection URL
    pg_cluster.py stop DIR      stop (fast) and remove DIR
    pg_cluster.py restart DIR   stop (fast) and start again, same port and data

Also a module: PgCluster(dir).start() / .stop() / .restart() / .url.
"""
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import time


def pg_bin():
    if os.environ.get("ZKFARM_PG_BIN"):  # a relocated copy (scripts/pg-pack.sh), on a machine without Debian's
        return os.environ["ZKFARM_PG_BIN"]
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise SystemExit("pg_cluster: no /usr/lib/postgresql/*/bin/initdb (scripts/setup.sh installs postgresql-15)")
    return os.path.dirname(found[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgCluster:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.data = os.path.join(self.root, "data")
        self.sock = os.path.join(self.root, "sock")
        self.log = os.path.join(self.root, "postgres.log")
        self.bin = pg_bin()
        self.as_user = "nobody" if os.geteuid() == 0 else None

    def _run(self, *args, check=True, password=None):
        cmd = list(args)
        if self.as_user:
            gid = str(pwd.getpwnam(self.as_user).pw_gid)  # nogroup on Debian; other systems name it otherwise
            cmd = ["setpriv", "--reuid", self.as_user, "--regid", gid, "--clear-groups", "--"] + cmd
        env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
        if os.environ.get("LD_LIBRARY_PATH"):  # a relocated copy's libraries
            env["LD_LIBRARY_PATH"] = os.environ["LD_LIBRARY_PATH"]
        if password:
            env["PGPASSWORD"] = password
        return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                              stdin=subprocess.DEVNULL, timeout=120)

    def _chown(self, path):
        if self.as_user:
            pw = pwd.getpwnam(self.as_user)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    @property
    def url(self):
        with open(os.path.join(self.root, "url")) as f:
            return f.read().strip()

    def start(self):
        if os.path.isdir(self.data):  # a run that ended without its cleanup
            self.stop()
        os.makedirs(self.root, exist_ok=True)
        os.chmod(self.root, 0o755)
        for d in (self.data, self.sock):
            os.makedirs(d, exist_ok=True)
            os.chmod(d, 0o700)
            self._chown(d)
        password = secrets.token_hex(16)
        pwfile = os.path.join(self.root, "pw")
        with open(pwfile, "w") as f:
            f.write(password + "\n")
        self._chown(pwfile)
        out = self._run(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "zkfarm", "--auth=scram-sha-256",
                        "--pwfile", pwfile, "-E", "UTF8", check=False)
        os.unlink(pwfile)
        if out.returncode != 0:
            raise RuntimeError("initdb failed:\n" + out.stdout)
        port = free_port()
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(f"\nlisten_addresses = '127.0.0.1'\nport = {port}\nunix_socket_directories = '{self.sock}'\n"
                    "max_connections = 300\nshared_buffers = 128MB\nfsync = on\nsynchronous_commit = on\n"
                    "log_min_messages = warning\n")
        open(self.log, "a").close()
        self._chown(self.log)
        self._start()
        out = self._run(os.path.join(self.bin, "createdb"), "-w", "-h", self.sock, "-p", str(port), "-U", "zkfarm",
                        "zkfarm", check=False, password=password)
        if out.returncode != 0:
            raise RuntimeError("createdb failed:\n" + out.stdout)
        with open(os.path.join(self.root, "url"), "w") as f:
            f.write(f"postgresql://zkfarm:{password}@127.0.0.1:{port}/zkfarm\n")
        os.chmod(os.path.join(self.root, "url"), 0o600)
        return self

    def _start(self):
        out = self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-l", self.log, "-w", "-t", "60", "start",
                        check=False)
        if out.returncode != 0:
            raise RuntimeError("pg_ctl start failed:\n" + out.stdout + "\n" + open(self.log).read()[-4000:])

    def stop(self, remove=True):
        if os.path.isdir(self.data):
            self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop", check=False)
        if remove:
            shutil.rmtree(self.root, ignore_errors=True)

    def restart(self, down_s=0.0):
        """Stops the server (fast: sessions are cut), waits `down_s`, starts it again."""
        self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop")
        time.sleep(down_s)
        self._start()


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop", "restart"):
        print(__doc__, file=sys.stderr)
        return 2
    c = PgCluster(sys.argv[2])
    getattr(c, sys.argv[1])()
    if sys.argv[1] == "start":
        print(c.url.split("@")[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
