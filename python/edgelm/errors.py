"""Exceptions of the package: one class per elm_status of the C library (include/edgelm/error.h).

Every error the library reports arrives as an `Error` subclass whose message is the library's own
(it names the file or the argument and the problem); `status` keeps the C code."""


class Error(Exception):
    """An edgelm call failed. `status` is the C library's elm_status code (int, 0 for errors the
    package raises itself before calling it), str(error) the message."""

    status = 0

    def __init__(self, message: str, status: "int | None" = None):
        super().__init__(message)
        if status is not None:
            self.status = status


class FileError(Error):
    """A file is missing, unreadable, or could not be written (ELM_ERR_IO)."""

    status = 1


class FormatError(Error):
    """Malformed input: bad magic, truncated file, inconsistent sizes (ELM_ERR_FORMAT)."""

    status = 2


class UnsupportedError(Error):
    """Well-formed but not handled: an architecture, a tensor type (ELM_ERR_UNSUPPORTED)."""

    status = 3


class OutOfMemoryError(Error, MemoryError):
    """An allocation failed (ELM_ERR_NOMEM)."""

    status = 4


class ArgumentError(Error, ValueError):
    """An invalid argument: a negative n_ctx, a prompt that does not fit, text that is not UTF-8
    (ELM_ERR_ARG)."""

    status = 5


class ClosedError(Error):
    """The model was closed (Model.close) and cannot be used any more."""


_BY_STATUS = {cls.status: cls for cls in (FileError, FormatError, UnsupportedError,
                                          OutOfMemoryError, ArgumentError)}


def error_for(status: int, message: "bytes | str") -> Error:
    """The exception for a failed C call: its status's class carrying the message (bytes are
    decoded as UTF-8, undecodable bytes replaced)."""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    return _BY_STATUS.get(status, Error)(message, status)
