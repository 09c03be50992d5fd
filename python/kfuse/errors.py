"""kfuse's errors as Python exceptions, one class per C API status."""


class Error(Exception):
    """A kfuse call failed; the message is kfuse's, naming the problem."""


class InvalidGraphError(Error, ValueError):
    """A shape, dtype or op error while building or parsing a graph."""


class InvalidArgumentError(Error, ValueError):
    """A bad argument: count, shape, dtype, name, stage."""


class CompileError(Error):
    """A pass or the backend failed."""


class NoDeviceError(Error):
    """No CUDA driver or no GPU."""


class DeviceError(Error):
    """A CUDA call failed."""


class CacheIOError(Error, OSError):
    """A file could not be read or written."""


_BY_STATUS = {1: InvalidGraphError, 2: InvalidArgumentError,
              3: CompileError, 4: NoDeviceError, 5: DeviceError,
              6: CacheIOError}


def from_status(status, message):
    return _BY_STATUS.get(status, Error)(message)
