"""The node agent's entry: ``srun`` runs ``python -P -m runner.engines.slurm.entry node-agent PLAN`` on
every node of a job (``script.agent_command``).

The agent is Python on every node, so its start-up is paid once per node: this entry starts it
without the command-line parser and the modules of the other commands (``python -m runner
node-agent`` is the same agent through the CLI).
"""

import sys

from runner.engines.slurm.agent import main

raise SystemExit(main(sys.argv[1:]))
