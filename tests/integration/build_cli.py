"""TEMP until runner/cli.py's `build` parser has --secret/--file/--context/--pull (asked of the lead):
the real CLI, with those four flags added to `build` and handed to `images.cmd_build` in
`BuildOptions`. Once the parser has them this is a plain pass-through to `runner.cli.main`.

    python3 tests/integration/build_cli.py [global options] build ...
"""

from __future__ import annotations

import sys

from runner import cli


def _has_flags() -> bool:
    parser = cli.build_parser()
    build = next(a for a in parser._subparsers._group_actions if a.dest == "cmd").choices["build"]
    return "--secret" in build._option_string_actions


def main() -> int:
    if _has_flags():
        return cli.main()
    original_parser, original_dispatch = cli.build_parser, cli._dispatch

    def build_parser():
        parser = original_parser()
        build = next(a for a in parser._subparsers._group_actions if a.dest == "cmd").choices["build"]
        build.add_argument("--secret", action="append", default=[], metavar="NAME")
        build.add_argument("--file", metavar="PATH")
        build.add_argument("--context", metavar="DIR")
        build.add_argument("--pull", choices=["missing", "always", "never"], default=None)
        return parser

    def dispatch(args, sources, out, parser):
        if args.cmd != "build":
            return original_dispatch(args, sources, out, parser)
        from runner import images
        from runner.options import BuildOptions

        return images.cmd_build(BuildOptions(
            sources=sources, flavor=args.flavor, base=args.base, tag=args.tag, build_args=tuple(args.build_arg),
            no_cache=args.no_cache, dry_run=args.dry_run, secrets=tuple(args.secret), file=args.file,
            context=args.context, pull=args.pull), out)

    cli.build_parser, cli._dispatch = build_parser, dispatch
    return cli.main()


if __name__ == "__main__":
    sys.exit(main())
