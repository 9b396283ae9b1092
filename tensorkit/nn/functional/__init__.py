"""``tk.nn.functional``: stateless neural-network functions (PyTorch's ``F``)."""

from .activation import *  # noqa: F403
from .attention import *  # noqa: F403
from .conv import *  # noqa: F403
from .distance import *  # noqa: F403
from .dropout import *  # noqa: F403
from .linear import *  # noqa: F403
from .loss import *  # noqa: F403
from .multihead import *  # noqa: F403
from .normalization import *  # noqa: F403
from .pooling import *  # noqa: F403
from .shuffle import *  # noqa: F403
from .sparse import *  # noqa: F403
