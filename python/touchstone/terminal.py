"""Text fitted to the terminal as the C++ CLI fits it (report/terminal.hpp terminal_width): COLUMNS
when it holds a positive number, else the width of the terminal on stdout, else the tables'
default (a pipe, a file, a CI log); never less than the tables' least width."""
import os
import sys
import textwrap

from . import tables


def width():
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0 and sys.stdout.isatty():
        try:
            columns = os.get_terminal_size(sys.stdout.fileno()).columns
        except OSError:
            columns = 0
    return max(columns if columns > 0 else tables.TERMINAL_WIDTH, tables.TERMINAL_MIN_WIDTH)


def fill(text, columns=None, indent="", subsequent=None):
    """`text` broken at spaces into lines of at most `columns` (default width()); continuation
    lines indented by `subsequent` (default `indent` and four more). Paths and names are never
    broken inside: a word longer than the line stands on a line of its own."""
    return textwrap.fill(text, columns or width(), initial_indent=indent,
                         subsequent_indent=indent + "    " if subsequent is None else subsequent,
                         break_long_words=False, break_on_hyphens=False)


def fill_within(text, columns=None, indent="", subsequent=None):
    """As fill(), but every line fits `columns`: a word longer than its line (a path under a
    long TMPDIR) is broken after a '/' where one falls in the line, else at the line's end. Its
    pieces continue at the start of the next lines, with no indent, so that they join back into
    the word by concatenation (as the C++ report continues a cut shell word at column 0)."""
    columns = columns or width()
    out = []
    for line in fill(text, columns, indent, subsequent).split("\n"):
        while len(line) > columns:
            cut = line.rfind("/", 0, columns) + 1
            # A break before the line's first word, or inside the indent, keeps nothing on it.
            if cut <= len(line) - len(line.lstrip(" ")) or " " in line[cut:columns]:
                cut = columns
            out.append(line[:cut])
            line = line[cut:]
        out.append(line)
    return "\n".join(out)
