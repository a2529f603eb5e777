"""The one error type of the file-format readers: a malformed file, with where and what to do."""
from __future__ import annotations

__all__ = ["FormatError"]


class FormatError(ValueError):
    """Malformed input file: ``str(err)`` is ``"file:line: problem. what to do"``.

    ``path`` is the file name (``"<string>"`` for text input), ``line`` the 1-based line
    (``None`` when the format has no line information, e.g. a JSON key path names the spot).
    """

    def __init__(self, path: str, line: int | None, problem: str, hint: str = "") -> None:
        self.path = str(path)
        self.line = line
        self.problem = problem.rstrip(".")
        hint = hint.strip()
        self.hint = hint[:1].upper() + hint[1:]
        where = self.path if line is None else f"{self.path}:{line}"
        message = f"{where}: {self.problem}."
        if self.hint:
            message += " " + self.hint.rstrip(".") + "."
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.path, self.line, self.problem, self.hint))
