"""Where npurt reads and writes files: only regular files, never a device, FIFO, directory or a command's own input.

Reading a FIFO blocks forever and a directory or device is not data; writing over (or renaming onto) a device
node, FIFO or directory destroys it, and writing a command's input over itself loses the input. These checks run
before any work, so a refused path is left exactly as it was.
"""
from __future__ import annotations

import math
import os
import stat
from pathlib import Path
from typing import Callable, Iterable

from npurt.errors import ErrorCode, NpuError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _stat(path: Path, what: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path}: {getattr(exc, 'strerror', None) or exc}") from None


def regular_input(path: "str | os.PathLike", what: str = "input",
                  code: ErrorCode = ErrorCode.INVALID_ARGUMENT) -> Path:
    """`path` when it names an existing regular file; `code` (INVALID_ARGUMENT unless the caller's contract names
    another) naming the path and what it is otherwise."""
    path = Path(os.fspath(path))
    st = _stat(path, what)
    if st is None:
        raise NpuError(code, f"{what} {path}: no such file")
    if not stat.S_ISREG(st.st_mode):
        raise NpuError(code, f"{what} {path} is {_kind(st.st_mode)}, not a regular file")
    return path


def regular_output(path: "str | os.PathLike", what: str = "output",
                   inputs: Iterable["str | os.PathLike"] = ()) -> Path:
    """`path` when it is a new path or an existing regular file that is none of `inputs`; INVALID_ARGUMENT
    (nothing touched) for a directory, FIFO, device or socket, or for the command's own input. A symbolic link is
    written through: the path returned is the file it points to (the link itself stays)."""
    path = Path(os.fspath(path))
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    st = _stat(path, what)
    if st is None:
        return path
    if not stat.S_ISREG(st.st_mode):
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path} is {_kind(st.st_mode)}: give a regular file or "
                                                   f"a new path")
    for given in inputs:
        other = _stat(Path(os.fspath(given)), "input")
        if other is not None and (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path} is the input {given}: it would be "
                                                       f"overwritten; give another path")
    return path


NPY_MAGIC = b"\x93NUMPY"


def read_npy(path: "str | os.PathLike", what: str = "file"):
    """The array in a `.npy` file (never unpickled); INVALID_ARGUMENT in one plain line for anything else (a text
    file, a dataset.txt, a pickled object array), instead of numpy's advice to load it unsafely."""
    import numpy as np
    path = regular_input(path, what)
    try:
        with open(path, "rb") as f:
            if f.read(len(NPY_MAGIC)) != NPY_MAGIC:
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path} is not a .npy file (an array written by "
                                                           f"numpy.save)")
            f.seek(0)
            version = np.lib.format.read_magic(f)
            header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = header(f)
            declared = math.prod(shape) * dtype.itemsize
            held = os.fstat(f.fileno()).st_size - f.tell()
            if not dtype.hasobject and declared > held:      # checked before numpy allocates the array
                raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path}: its header declares {declared} bytes "
                                                           f"(shape {shape}), the file holds {held}")
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except OSError as exc:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path}: {exc.strerror or exc}") from None
    except MemoryError:
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path}: too large to load") from None
    except ValueError as exc:
        why = "holds Python objects, not an array of numbers" if "allow_pickle" in str(exc) else str(exc)
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{what} {path}: {why}") from None


def umask() -> int:
    """The process umask, read without changing it (`/proc/self/status`; `os.umask` set-and-restore elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def plain_file_mode(path: "str | os.PathLike") -> int:
    """The permission bits `open(path, "w")` leaves `path` with: an existing file keeps its own, a new one gets
    0666 less the umask. Files written through a temporary file and a rename get the same (mkstemp makes 0600)."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        return 0o666 & ~umask()


def write_exactly(path: "str | os.PathLike", write: Callable, what: str = "output") -> None:
    """Call `write(file)` on `path` opened for binary writing — exactly that path, no extension added — after
    `regular_output` accepted it; a failed write removes a file it created."""
    path = regular_output(path, what)
    existed = path.exists()
    try:
        with open(path, "wb") as f:
            write(f)
    except BaseException:
        if not existed:
            path.unlink(missing_ok=True)
        raise


def save_figure(fig, path: "str | os.PathLike", **savefig_kwargs) -> None:
    """Save a matplotlib figure to exactly `path`, in the format its suffix names (PNG without one)."""
    path = Path(os.fspath(path))
    fmt = path.suffix.lstrip(".").lower() or "png"
    if fmt not in fig.canvas.get_supported_filetypes():
        raise NpuError(ErrorCode.INVALID_ARGUMENT, f"{path}: cannot save a picture as {fmt!r} (use "
                                                   f"{', '.join(sorted(fig.canvas.get_supported_filetypes()))})")
    write_exactly(path, lambda f: fig.savefig(f, format=fmt, **savefig_kwargs), "picture")
