"""Optimizers and learning-rate schedulers with PyTorch's names, arguments and numerics:

>>> import tensorkit.optim as optim
>>> opt = optim.Adam(params, lr=1e-3)
>>> sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=100)
>>> loss.backward(); opt.step(); opt.zero_grad(); sched.step()
"""

from . import lr_scheduler
from .adadelta import Adadelta
from .adafactor import Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = [
    "Optimizer",
    "SGD",
    "Adam",
    "AdamW",
    "RMSprop",
    "Adagrad",
    "Adadelta",
    "Adamax",
    "NAdam",
    "RAdam",
    "LBFGS",
    "Rprop",
    "ASGD",
    "Adafactor",
    "lr_scheduler",
]
