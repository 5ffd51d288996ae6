"""Starts a worker with limits: ``python _kernel_launcher.py [--cgroup FILES] [--memory B --workdir D --uid U] -- CMD``.

Run as a script by :mod:`jtk.course.sandbox` (so it imports nothing of jtk and costs no start-up time): joins the
sandbox's control groups (``--cgroup``: ``cgroup.procs`` files joined by ``os.pathsep``, before anything else, so
every process the worker starts is in them), puts the process in its own session, limits its address space, file
size and core dumps, moves into the worker's directory, drops to ``uid`` when one is given (user mode), then
replaces itself by the worker's command. In bwrap it runs twice: outside bwrap to join the groups (the sandbox has
no ``/sys``), and inside it for the rest.
"""

import os
import resource
import sys

FILE_SIZE_LIMIT = 512 * 2 ** 20  # bytes one file written by a worker may reach


def main(argv=None) -> None:
    """Applies the limits, then execs the worker command."""
    argv = list(sys.argv[1:] if argv is None else argv)
    split = argv.index("--")
    opts, cmd = dict(zip(argv[:split:2], argv[1:split:2])), argv[split + 1:]
    for procs in filter(None, opts.get("--cgroup", "").split(os.pathsep)):
        with open(procs, "w") as f:  # fails loudly: a worker never runs outside the groups it was given
            f.write(str(os.getpid()))
    try:
        os.setsid()  # its own session and process group (the parent usually did this already)
    except OSError:
        pass
    if "--memory" not in opts:
        os.execv(cmd[0], cmd)
    memory, workdir, uid = int(opts["--memory"]), opts["--workdir"], int(opts["--uid"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))
    os.chdir(workdir)
    if uid >= 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (1024, 1024))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
