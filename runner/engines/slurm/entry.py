"""The node agent's entry: ``srun`` runs ``python -S -P …/runner/engines/slurm/entry.py --path DIRS node-agent PLAN``
on every node of a job (``script.agent_command``).

The agent is Python on every node, so its start-up is paid once per node. ``-S`` skips
``site``: no ``.pth`` file of the interpreter's installs is read and run, and no install
directory is searched, on every node at once (on a shared file system, each is a round trip
to its server). ``--path`` puts back exactly the directories the submitting process imported
from (``script.agent_path``); the agent itself loads no command-line parser
(``python -m runner node-agent`` is the same agent through the CLI).
"""

import os
import sys

if sys.path and sys.path[0] == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]  # Python 3.10 (no -P): the script's own directory is no place to import from
argv = sys.argv[1:]
if argv[:1] == ["--path"]:
    sys.path[:0] = argv[1].split(os.pathsep)
    argv = argv[2:]

from runner.engines.slurm.agent import main  # noqa: E402  (after the path: it is how the package is found)

raise SystemExit(main(argv))
