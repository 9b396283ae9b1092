"""Process groups: the default (world) group, ``new_group``, and rank translation."""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass
from typing import Any, ClassVar

from ._mpi import MpiBackend, mpi_module

__all__ = [
    "GroupMember",
    "ProcessGroup",
    "default_pg_timeout",
    "destroy_process_group",
    "get_backend",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "new_group",
]

default_pg_timeout = datetime.timedelta(minutes=30)
_BACKENDS = ("mpi", "nccl")


@dataclass(eq=False)
class ProcessGroup:
    """Ranks that run collectives together: their global ranks, the backend, the timeout.

    A timeout given to ``init_process_group`` or ``new_group`` is enforced: waits then poll
    the operation until its deadline and raise ``DistBackendError`` past it. Without one
    (torch's default of 30 minutes is reported), waits block in MPI's own wait, which moves
    large messages faster than any polling loop (MPI progresses inside its calls only).
    """

    backend: Any  # MpiBackend or NcclBackend
    ranks: list[int]  # global rank of each group rank
    timeout: datetime.timedelta
    name: str
    enforce_timeout: bool = False

    @property
    def deadline_s(self) -> float | None:
        """Seconds a wait may take before it raises; None when waits block in MPI."""
        return self.timeout.total_seconds() if self.enforce_timeout else None

    def rank(self) -> int:
        return self.backend.rank

    def size(self) -> int:
        return self.backend.size

    def group_rank(self, global_rank: int) -> int:
        """The rank in this group of ``global_rank``, or a ValueError naming both."""
        try:
            return self.ranks.index(global_rank)
        except ValueError:
            raise ValueError(
                f"Group {self.name} does not contain global rank {global_rank} "
                f"(its ranks: {self.ranks})"
            ) from None

    def __repr__(self) -> str:
        return (
            f"ProcessGroup(name={self.name!r}, backend={self.backend.name!r}, ranks={self.ranks})"
        )


class _NonGroupMember:
    def __repr__(self) -> str:
        return "GroupMember.NON_GROUP_MEMBER"


class GroupMember:
    """``GroupMember.WORLD`` (the default group) and ``NON_GROUP_MEMBER``, as torch's."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = _NonGroupMember()


class _World:
    default: ProcessGroup | None = None
    groups: ClassVar[list[ProcessGroup]] = []


def is_available() -> bool:
    """Whether tensorkit.distributed can be used here (it always can; MPI is a backend)."""
    return True


def is_mpi_available() -> bool:
    """Whether mpi4py (and an MPI library) can be imported."""
    try:
        mpi_module()
    except RuntimeError:
        return False
    return True


def is_nccl_available() -> bool:
    """Whether CuPy's NCCL bindings loaded libnccl (the nvidia-nccl-cu12 wheel or a system's)."""
    from ._nccl import nccl_module

    return nccl_module() is not None


def is_initialized() -> bool:
    """Whether the default process group has been initialized."""
    return _World.default is not None


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
) -> None:
    """Make the default process group of every rank MPI started (mpiexec, srun, or the
    launcher ``python -m tensorkit.distributed.run``); a lone process is a world of one.

    ``backend`` is "mpi" (CPU tensors) or "nccl" (CUDA tensors, bootstrapped over MPI). MPI
    decides the ranks, so ``world_size`` and ``rank``, when given, must agree with it;
    ``init_method`` is accepted for torch's scripts ("env://") and otherwise unused.
    """
    if _World.default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if store is not None:
        raise ValueError("tensorkit.distributed has no Store: ranks meet through MPI")
    name = "mpi" if backend is None else str(backend).lower()
    if name not in _BACKENDS:
        raise ValueError(f"Invalid backend: '{backend}' (tensorkit.distributed has 'mpi', 'nccl')")
    mpi = mpi_module()
    world = mpi.COMM_WORLD
    _check_agrees("world_size", world_size, world.Get_size(), "WORLD_SIZE")
    _check_agrees("rank", rank, world.Get_rank(), "RANK")
    mpi_backend = MpiBackend(world)
    chosen = mpi_backend if name == "mpi" else _nccl_backend(mpi_backend, device_id)
    group = ProcessGroup(
        chosen,
        list(range(world.Get_size())),
        timeout or default_pg_timeout,
        group_name or "0",
        enforce_timeout=timeout is not None,
    )
    _World.default = group
    _World.groups = [group]
    GroupMember.WORLD = group


def _check_agrees(what: str, given: int, actual: int, env: str) -> None:
    if given not in (-1, None) and int(given) != actual:
        raise ValueError(
            f"init_process_group got {what}={given}, but MPI started this process as {what} "
            f"{actual} ({env}={os.environ.get(env, 'unset')})"
        )


def _nccl_backend(bootstrap: MpiBackend, device_id: Any) -> Any:
    from ._nccl import NcclBackend

    return NcclBackend(bootstrap, device_id)


def default_group() -> ProcessGroup:
    """The default group, or torch's error when init_process_group was not called."""
    if _World.default is None:
        raise ValueError(
            "Default process group has not been initialized, please make sure to call "
            "init_process_group."
        )
    return _World.default


def resolve(group: Any) -> ProcessGroup | None:
    """The group to run on: ``None`` is the default one; None back when not a member."""
    if group is None or group is GroupMember.WORLD:
        return default_group()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    default_group()
    if not isinstance(group, ProcessGroup):
        raise TypeError(
            f"group must be a ProcessGroup from new_group(), got {type(group).__name__}"
        )
    if group not in _World.groups:
        raise ValueError(f"{group} was destroyed or belongs to an older default group")
    return group


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group by default); -1 when not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.rank()


def get_world_size(group: Any = None) -> int:
    """The number of ranks in ``group``; -1 when this process is not a member."""
    pg = resolve(group)
    return -1 if pg is None else pg.size()


def get_process_group_ranks(group: Any = None) -> list[int]:
    """The global ranks of ``group``'s members, in group-rank order."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return list(pg.ranks)


def get_backend(group: Any = None) -> str:
    """The backend's name ("mpi" or "nccl") of ``group``."""
    pg = resolve(group)
    if pg is None:
        raise ValueError("Invalid process group specified")
    return pg.backend.name


def new_group(
    ranks: list[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
) -> Any:
    """A group of the given global ``ranks`` (every rank must call it, as in torch); ranks
    outside it get ``GroupMember.NON_GROUP_MEMBER``."""
    world = default_group()
    members = sorted(set(range(world.size()) if ranks is None else (int(r) for r in ranks)))
    for member in members:
        if not 0 <= member < world.size():
            raise ValueError(
                f"new_group got rank {member}, outside the world of {world.size()} ranks"
            )
    name = (backend or world.backend.name).lower()
    if name != world.backend.name:
        raise ValueError(
            f"new_group(backend={backend!r}) differs from the default group's backend "
            f"{world.backend.name!r}; tensorkit groups share the default group's backend"
        )
    mpi_world = _mpi_of(world.backend)
    me = world.rank()
    comm = mpi_world.split(0 if me in members else None, me)
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    sub = MpiBackend(comm)
    chosen = sub if name == "mpi" else _nccl_backend(sub, getattr(world.backend, "device", None))
    group = ProcessGroup(
        chosen,
        members,
        timeout or world.timeout,
        group_desc or str(len(_World.groups)),
        enforce_timeout=timeout is not None or world.enforce_timeout,
    )
    _World.groups.append(group)
    return group


def _mpi_of(backend: Any) -> MpiBackend:
    return backend if isinstance(backend, MpiBackend) else backend.bootstrap


def destroy_process_group(group: Any = None) -> None:
    """Free ``group``'s communicator; with no argument every group, default one included."""
    if group is None or group is GroupMember.WORLD:
        pg = default_group()
        for each in _World.groups[1:]:
            _free(each)
        _free(pg)
        _World.default = None
        _World.groups = []
        GroupMember.WORLD = None
        return
    pg = resolve(group)
    if pg is not None:
        _World.groups.remove(pg)
        _free(pg)


def _free(group: ProcessGroup) -> None:
    group.backend.free()
