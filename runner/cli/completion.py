"""``completion bash|zsh|fish``: shell completion generated from the argparse parser.

Generated from the CLI's parser (``cli.build_parser()``, passed in) at run time, so every command and flag the
CLI accepts is completed and a new flag needs no edit here. Written by hand
rather than with shtab (bash and zsh only, no fish) or argcomplete (a Python
start-up on every TAB): the scripts are static and answer instantly. Only the
names of the runner's own containers and Slurm jobs (``logs``, ``down``,
``status``, ``cancel``) ask the runner, through the hidden ``__complete KIND``.
Descriptions keep their text: each shell's quoting is applied, nothing is dropped.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

PROG = "primus-runner"
FUNC = "_primus_runner"
# Option values that name files or directories (completed as paths).
_PATH_METAVARS = {"FILE", "DIR", "PATH", "SRC[:DST[:OPTS]]", "TARGET"}
# The positional argument of these commands names the runner's containers or Slurm jobs (``__complete KIND``).
DYNAMIC = {"logs": "names", "down": "containers", "exec": "containers", "status": "jobs", "cancel": "jobs"}


@dataclass(frozen=True)
class Option:
    strings: tuple[str, ...]
    help: str
    takes_value: bool
    choices: tuple[str, ...] = ()
    path: bool = False
    repeat: bool = False


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    options: tuple[Option, ...]
    positional_choices: tuple[str, ...] = ()
    positional_paths: bool = False

    @property
    def dynamic(self) -> str | None:
        return DYNAMIC.get(self.name)


@dataclass(frozen=True)
class Spec:
    globals: tuple[Option, ...]
    commands: tuple[Command, ...] = field(default_factory=tuple)


def _options(parser: argparse.ArgumentParser) -> tuple[tuple[Option, ...], tuple[str, ...], bool]:
    options: list[Option] = []
    choices: tuple[str, ...] = ()
    paths = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):  # slurm srun|sbatch: the launchers and their flags
            choices = tuple(action.choices)
            seen = {s for o in options for s in o.strings}
            for sub in action.choices.values():
                for option in _options(sub)[0]:
                    if not seen & set(option.strings):
                        options.append(option)
                        seen.update(option.strings)
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            takes = action.nargs != 0
            metavar = str(action.metavar or "")
            options.append(
                Option(
                    tuple(action.option_strings),
                    _clean(action.help or ""),
                    takes,
                    tuple(str(c) for c in action.choices or ()),
                    takes and metavar in _PATH_METAVARS,
                    isinstance(action, argparse._AppendAction),
                )
            )
        elif action.choices:
            choices = tuple(str(c) for c in action.choices)
        elif action.dest in ("targets", "plan_file") or str(action.metavar) in _PATH_METAVARS:
            paths = True
    return tuple(options), choices, paths


def _clean(text: str) -> str:
    """The help's first line, as it reads (each shell quotes it itself: ``_sq``, ``_zsh_help``)."""
    return text.replace("%(default)s", "").split("\n")[0].strip()


def _sq(text: str) -> str:
    """``text`` inside a POSIX single-quoted word (bash, zsh): ``'`` becomes ``'\\''``."""
    return text.replace("'", "'\\''")


def _zsh_help(text: str) -> str:
    """An ``_arguments`` description: ``[``, ``]``, ``:`` and ``\\`` escaped, then single-quoted."""
    for char in "\\[]:":
        text = text.replace(char, "\\" + char)
    return _sq(text)


def _fish_sq(text: str) -> str:
    """Inside fish's single quotes only ``\\`` and ``'`` are special."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def spec_from_parser(parser: argparse.ArgumentParser) -> Spec:
    """Commands (hidden ones left out) and options, as plain data."""
    globals_, _, _ = _options(parser)
    commands: list[Command] = []
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, sub in action.choices.items():
            if helps.get(name, argparse.SUPPRESS) == argparse.SUPPRESS:  # internal (node-agent, __complete)
                continue
            opts, choices, paths = _options(sub)
            commands.append(Command(name, _clean(helps[name] or ""), opts, choices, paths))
    return Spec(globals_, tuple(commands))


# -- bash -------------------------------------------------------------------
def _bash_opt_words(opts: tuple[Option, ...]) -> str:
    return " ".join(s for o in opts for s in o.strings)


def _bash_value_cases(opts: tuple[Option, ...], indent: str) -> list[str]:
    lines = []
    for o in opts:
        if not o.takes_value:
            continue
        what = "__path__" if o.path else (" ".join(o.choices) if o.choices else "__any__")
        lines.append(f"{indent}{'|'.join(o.strings)}) echo '{what}';;")
    return lines


def bash_script(spec: Spec) -> str:
    """The helpers (each command's options, what a value is, what a positional is), then the one function."""
    return "\n".join(_bash_tables(spec) + _bash_function(" ".join(c.name for c in spec.commands)))


def _bash_tables(spec: Spec) -> list[str]:
    """``_opts``, ``_value`` and ``_positional``: the parser's facts as bash ``case`` tables."""
    out = [
        f"# bash completion for {PROG} (generated from its argument parser)",
        f"# load with: source <({PROG} completion bash)",
        f"{FUNC}_opts() {{",
        '    case "$1" in',
        f"        '') echo '{_bash_opt_words(spec.globals)}';;",
    ]
    out += [f"        {c.name}) echo '{_bash_opt_words(c.options)}';;" for c in spec.commands]
    out += ["    esac", "}", "", f"{FUNC}_value() {{", '    case "$1" in', "        '')", '            case "$2" in']
    out += _bash_value_cases(spec.globals, "                ")
    out += ["            esac;;"]
    for c in spec.commands:
        cases = _bash_value_cases(c.options, "                ")
        if cases:
            out += [f"        {c.name})", '            case "$2" in'] + cases + ["            esac;;"]
    out += ["    esac", "}", "", f"{FUNC}_positional() {{", '    case "$1" in']
    for c in spec.commands:
        if c.dynamic:
            out.append(f"        {c.name}) echo '__dynamic__{c.dynamic}';;")
        elif c.positional_choices:
            out.append(f"        {c.name}) echo '{' '.join(c.positional_choices)}';;")
        elif c.positional_paths:
            out.append(f"        {c.name}) echo '__path__';;")
    out += ["        *) echo '__path__';;", "    esac", "}", ""]
    return out


def _bash_function(cmds: str) -> list[str]:
    """The completion function: which command, which option wants a value, then the candidates."""
    return [
        f"{FUNC}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" prev="" cmd="" w i skip=0 what',
        "    COMPREPLY=()",
        '    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"',
        '    if [[ $cur == "=" ]]; then cur=""; fi',
        '    if [[ $prev == "=" ]] && (( COMP_CWORD > 1 )); then prev="${COMP_WORDS[COMP_CWORD-2]}"; fi',
        "    for (( i=1; i<COMP_CWORD; i++ )); do",
        '        w="${COMP_WORDS[i]}"',
        '        if (( skip )); then skip=0; continue; fi',
        '        [[ $w == "=" ]] && continue',
        '        if [[ $w == "--" ]]; then',
        "            # the job's command: paths",
        '            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ); return 0',
        "        fi",
        '        if [[ $w == -* ]]; then',
        f'            if [[ $w != *=* && $(\"{FUNC}_value\" \"$cmd\" \"$w\") != "" ]]; then',
        '                [[ "${COMP_WORDS[i+1]}" != "=" ]] && skip=1',
        "            fi",
        "            continue",
        "        fi",
        '        [[ -z $cmd ]] && cmd="$w"',
        "    done",
        '    if [[ $prev == -* ]]; then',
        f'        what="$({FUNC}_value "$cmd" "$prev")"',
        '        case "$what" in',
        "            '') ;;",
        '            __path__) compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") ); return 0;;',
        "            __any__) return 0;;",
        '            *) COMPREPLY=( $(compgen -W "$what" -- "$cur") ); return 0;;',
        "        esac",
        "    fi",
        '    if [[ $cur == -* ]]; then',
        f'        COMPREPLY=( $(compgen -W "$({FUNC}_opts "$cmd") -h --help" -- "$cur") )',
        '    elif [[ -z $cmd ]]; then',
        f"        COMPREPLY=( $(compgen -W '{cmds}' -- \"$cur\") )",
        "    else",
        f'        what="$({FUNC}_positional "$cmd")"',
        '        if [[ $what == __path__ ]]; then',
        '            compopt -o filenames 2>/dev/null; COMPREPLY=( $(compgen -f -- "$cur") )',
        '        elif [[ $what == __dynamic__* ]]; then',
        f'            COMPREPLY=( $(compgen -W "$(command {PROG} __complete "${{what#__dynamic__}}" 2>/dev/null)" -- "$cur") )',
        "        else",
        '            COMPREPLY=( $(compgen -W "$what" -- "$cur") )',
        "        fi",
        "    fi",
        "    return 0",
        "}",
        f"complete -F {FUNC} {PROG}",
        "",
    ]



# -- zsh --------------------------------------------------------------------
def _zsh_specs(opts: tuple[Option, ...]) -> list[str]:
    specs = []
    for o in opts:
        for s in o.strings:
            head = ("*" if o.repeat else "") + s
            action = ""
            if o.takes_value:
                if o.choices:
                    action = f":{o.strings[-1].lstrip('-')}:({' '.join(o.choices)})"
                elif o.path:
                    action = ":path:_files"
                else:
                    action = f":{o.strings[-1].lstrip('-')}: "
            specs.append(f"'{head}[{_zsh_help(o.help)}]{action}'")
    specs.append("'(- *)'{-h,--help}'[show help]'")
    return specs


def zsh_script(spec: Spec) -> str:
    out = [
        f"#compdef {PROG}",
        f"# zsh completion for {PROG} (generated from its argument parser)",
        f"# load with: source <({PROG} completion zsh)   (after compinit)",
        f"{FUNC}_names() {{  # the runner's own containers / Slurm jobs",
        "    local -a names",
        f'    names=(${{(f)"$(command {PROG} __complete $1 2>/dev/null)"}})',
        "    compadd -a names",
        "}",
        f"{FUNC}() {{",
        "    local curcontext=\"$curcontext\" state line ret=1",
        "    typeset -A opt_args",
        "    _arguments -C \\",
    ]
    out += [f"        {s} \\" for s in _zsh_specs(spec.globals)]
    out += ["        '1:command:->command' \\", "        '*::arg:->args' && ret=0", "    case $state in", "        command)", "            local -a commands", "            commands=("]
    out += [f"                '{c.name}:{_sq(c.help)}'" for c in spec.commands]
    out += ["            )", f"            _describe -t commands '{PROG} command' commands && ret=0", "            ;;", "        args)", "            case $line[1] in"]
    for c in spec.commands:
        rest = "'*:job command:_files'"
        if c.dynamic:
            rest = f"'{'*' if c.name == 'down' else '1'}:name:{{{FUNC}_names {c.dynamic}}}'"
        elif c.positional_choices:
            rest = f"'1:{c.name}:({' '.join(c.positional_choices)})'"
        specs = _zsh_specs(c.options) + [rest]
        out.append(f"                {c.name})")
        out.append("                    _arguments \\")
        out += [f"                        {s} \\" for s in specs[:-1]]
        out.append(f"                        {specs[-1]} && ret=0")
        out.append("                    ;;")
    out += [
        "            esac",
        "            ;;",
        "    esac",
        "    return ret",
        "}",
        f'if [[ "${{funcstack[1]}}" == "{FUNC}" ]]; then',
        f'    {FUNC} "$@"',
        "elif (( $+functions[compdef] )); then",
        f"    compdef {FUNC} {PROG}",
        "fi",
        "",
    ]
    return "\n".join(out)


# -- fish -------------------------------------------------------------------
def fish_script(spec: Spec) -> str:
    def line(cond: str, o: Option) -> str:
        parts = [f"complete -c {PROG} -n '{cond}'"]
        for s in o.strings:
            parts.append(f"-l {s[2:]}" if s.startswith("--") else f"-s {s[1:]}")
        if o.takes_value:
            if o.choices:
                parts.append(f"-x -a '{' '.join(o.choices)}'")
            elif o.path:
                parts.append("-r -F")
            else:
                parts.append("-x")
        if o.help:
            parts.append(f"-d '{_fish_sq(o.help)}'")
        return " ".join(parts)

    names = " ".join(c.name for c in spec.commands)
    out = [
        f"# fish completion for {PROG} (generated from its argument parser)",
        f"# load with: {PROG} completion fish | source",
        f"complete -c {PROG} -f",
        f"complete -c {PROG} -s h -l help -d 'show help'",
    ]
    out += [line("__fish_use_subcommand", o) for o in spec.globals]
    out += [f"complete -c {PROG} -n '__fish_use_subcommand' -a {c.name} -d '{_fish_sq(c.help)}'" for c in spec.commands]
    for c in spec.commands:
        cond = f"__fish_seen_subcommand_from {c.name}"
        out += [line(cond, o) for o in c.options]
        if c.dynamic:  # the runner's own containers / Slurm jobs, asked on TAB
            out.append(f"complete -c {PROG} -n '{cond}' -f -a '({PROG} __complete {c.dynamic} 2>/dev/null)'")
        elif c.positional_choices:
            out.append(f"complete -c {PROG} -n '{cond}' -a '{' '.join(c.positional_choices)}'")
        elif c.positional_paths or any(o.strings[0] == "--image" for o in c.options):
            out.append(f"complete -c {PROG} -n '{cond}' -F")
    out.append(f"# commands: {names}")
    return "\n".join(out) + "\n"


GENERATORS = {"bash": bash_script, "zsh": zsh_script, "fish": fish_script}


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell``, generated from the CLI's own ``parser``."""
    return GENERATORS[shell](spec_from_parser(parser))
