"""Module API: registration, traversal order and names, state dicts, hooks, modes, dtype
moves, printing, and the module paths a Tape records."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import tensorkit as tk
import tensorkit.nn as nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(4, 3), nn.ReLU())
        self.fc = nn.Linear(3, 2)
        self.scale = nn.Parameter(tk.ones(1))
        self.register_buffer("steps", tk.zeros(1))
        self.register_buffer("scratch", tk.zeros(2), persistent=False)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.fc(self.features(x)) * self.scale


# ------------------------------------------------------------------------ registration
def test_attributes_register_in_order_with_dotted_names():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == [
        "scale",
        "features.0.weight",
        "features.0.bias",
        "fc.weight",
        "fc.bias",
    ]
    assert [n for n, _ in net.named_buffers()] == ["steps", "scratch"]
    assert [n for n, _ in net.named_modules()] == ["", "features", "features.0", "features.1", "fc"]
    assert [n for n, _ in net.named_children()] == ["features", "fc"]
    assert next(net.named_parameters(prefix="model"))[0] == "model.scale"
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert len(list(net.modules())) == 5 and list(net.children())[1] is net.fc


def test_shared_parameters_and_modules_are_listed_once_unless_asked():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert [n for n, _ in model.named_modules()] == ["", "0"]
    assert len(list(model.named_modules(remove_duplicate=False))) == 3


def test_none_placeholders_are_registered_but_skipped():
    layer = nn.Linear(2, 3, bias=False)
    assert layer.bias is None and "bias" in layer._parameters
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    assert list(layer.state_dict()) == ["weight"]


def test_reassigning_and_deleting_registered_names():
    net = Net()
    net.fc = None
    assert net.fc is None and [n for n, _ in net.named_children()] == ["features"]
    net.scale = None
    assert "scale" not in dict(net.named_parameters())
    net.steps = tk.ones(1)  # a plain tensor assigned to a buffer name stays a buffer
    assert dict(net.named_buffers())["steps"].item() == 1.0
    net.extra = nn.Buffer(tk.zeros(3), persistent=False)
    assert "extra" in dict(net.named_buffers()) and "extra" not in net.state_dict()
    del net.features
    assert not hasattr(net, "features")
    net.plain = 3
    assert net.plain == 3 and "plain" not in net._parameters


def test_registration_errors():
    net = Net()
    with pytest.raises(TypeError, match=r"cannot assign 'tensorkit.Tensor' as parameter 'scale'"):
        net.scale = tk.ones(1)
    with pytest.raises(TypeError, match="as child module 'fc'"):
        net.fc = 3
    with pytest.raises(KeyError, match=r'contain "\."'):
        net.register_parameter("a.b", nn.Parameter(tk.ones(1)))
    with pytest.raises(KeyError, match="be empty string"):
        net.register_buffer("", tk.ones(1))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        net.register_buffer("forward", tk.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'b'"):
        net.register_buffer("b", 3)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        net.add_module("x", 3)
    produced = nn.Parameter(tk.ones(1), requires_grad=False)
    produced.mul_(tk.ones(1, requires_grad=True))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'w'"):
        net.register_parameter("w", produced)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        _ = net.missing

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(tk.ones(1))

    with pytest.raises(AttributeError, match=r"before Module.__init__\(\) call"):
        Early()


def test_register_parameter_type_error_and_non_leaf():
    module = nn.Module()
    with pytest.raises(TypeError, match=r"cannot assign 'tensorkit\.Tensor' object to parameter"):
        module.register_parameter("w", tk.ones(1))  # type: ignore[arg-type]


def test_get_submodule_and_forward_missing():
    net = Net()
    assert net.get_submodule("features.0") is net.features[0]
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        net.get_submodule("features.nope")
    with pytest.raises(NotImplementedError, match=r"Module \[Module\] is missing the required"):
        nn.Module()(tk.ones(1))


def test_get_parameter_and_get_buffer():
    net = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    assert net.get_parameter("0.weight") is net[0].weight
    assert net.get_buffer("1.running_mean") is net[1].running_mean
    with pytest.raises(AttributeError, match=r"`running_mean` is not an nn\.Parameter"):
        net.get_parameter("1.running_mean")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        net.get_buffer("0.weight")
    with pytest.raises(AttributeError, match="Linear has no attribute `nope`"):
        net.get_parameter("0.nope")


def test_parameter_is_a_tensor_that_shares_storage():
    data = tk.zeros(3)
    param = nn.Parameter(data)
    assert param.requires_grad and param.is_leaf and isinstance(param, tk.Tensor)
    with tk.no_grad():
        param.add_(1.0)
    assert data.tolist() == [1.0, 1.0, 1.0]
    assert repr(nn.Parameter(tk.tensor([1.0, 2.0]))) == (
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    )
    frozen = nn.Parameter(tk.ones(1), requires_grad=False)
    assert not frozen.requires_grad
    assert isinstance(copy.deepcopy(param), nn.Parameter)
    restored = pickle.loads(pickle.dumps(param))
    assert isinstance(restored, nn.Parameter) and restored.tolist() == [1.0, 1.0, 1.0]
    assert nn.Parameter().shape == (0,)


# -------------------------------------------------------------------------- state dict
def test_state_dict_round_trip_keeps_parameter_objects():
    source, target = Net(), Net()
    state = source.state_dict()
    assert list(state) == [
        "scale",
        "steps",
        "features.0.weight",
        "features.0.bias",
        "fc.weight",
        "fc.bias",
    ]
    assert not state["fc.weight"].requires_grad
    assert source.state_dict(keep_vars=True)["fc.weight"] is source.fc.weight
    weight = target.fc.weight
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    assert target.fc.weight is weight
    np.testing.assert_array_equal(target.fc.weight.detach().numpy(), state["fc.weight"].numpy())
    x = tk.randn(2, 4)
    np.testing.assert_array_equal(source(x).detach().numpy(), target(x).detach().numpy())


def test_strict_load_reports_every_problem_at_once():
    net = Net()
    state = net.state_dict()
    del state["fc.bias"]
    del state["steps"]
    state["fc.extra"] = tk.zeros(1)
    state["features.0.weight"] = tk.zeros(5, 4)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(state)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Net:\n"
        '\tMissing key(s) in state_dict: "steps", "fc.bias". \n'
        '\tUnexpected key(s) in state_dict: "fc.extra". \n'
        "\tsize mismatch for features.0.weight: copying a param with shape "
        "tensorkit.Size([5, 4]) from checkpoint, the shape in current model is "
        "tensorkit.Size([3, 4])."
    )


def test_non_strict_load_returns_the_keys_but_size_mismatch_still_raises():
    net = Net()
    state = net.state_dict()
    del state["fc.bias"]
    state["other"] = tk.zeros(1)
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["fc.bias"] and result.unexpected_keys == ["other"]
    assert result == (["fc.bias"], ["other"])
    state["fc.weight"] = tk.zeros(1)
    with pytest.raises(RuntimeError, match=r"size mismatch for fc\.weight"):
        net.load_state_dict(state, strict=False)
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])  # type: ignore[arg-type]


def test_load_with_assign_adopts_the_given_tensors():
    net = nn.Linear(2, 2)
    weight = tk.ones(2, 2)
    net.load_state_dict({"weight": weight, "bias": tk.zeros(2)}, assign=True)
    assert isinstance(net.weight, nn.Parameter) and net.weight.requires_grad
    with tk.no_grad():
        weight.add_(1.0)
    assert net.weight.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_load_state_dict_matches_torch_checkpoint_keys():
    torch = pytest.importorskip("torch")
    theirs = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    mine = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    state = {k: tk.tensor(v.numpy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(mine.state_dict())
    mine.load_state_dict(state)
    assert mine[1].num_batches_tracked.dtype == tk.int64


# ---------------------------------------------------------------------------------- hooks
def test_forward_hooks_replace_args_and_outputs_and_can_be_removed():
    layer = nn.Identity()
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    post = layer.register_forward_hook(lambda m, args, out: out + 1)
    layer.register_forward_hook(lambda m, args, out: calls.append(out.item()))
    assert layer(tk.tensor(1.0)).item() == 3.0
    assert calls == [3.0]
    pre.remove()
    post.remove()
    assert layer(tk.tensor(1.0)).item() == 1.0


def test_hooks_with_kwargs_prepend_and_always_call():
    class Scale(nn.Module):
        def forward(self, x: tk.Tensor, factor: float = 1.0) -> tk.Tensor:
            if factor < 0:
                raise ValueError("negative factor")
            return x * factor

    module = Scale()
    order = []
    module.register_forward_pre_hook(
        lambda m, args, kwargs: (args, {"factor": kwargs["factor"] * 10}), with_kwargs=True
    )
    module.register_forward_hook(lambda m, a, k, out: order.append(("kw", k)), with_kwargs=True)
    module.register_forward_hook(lambda m, a, out: order.append("first"), prepend=True)
    assert module(tk.tensor(1.0), factor=2.0).item() == 20.0
    assert order == ["first", ("kw", {"factor": 20.0})]

    seen = []
    module.register_forward_hook(lambda m, a, out: seen.append(out), always_call=True)
    with pytest.raises(ValueError, match="negative factor"):
        module(tk.tensor(1.0), factor=-1.0)
    assert seen == [None]

    bad = Scale()
    bad.register_forward_pre_hook(lambda m, a, k: 3, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        bad(tk.tensor(1.0))


# ------------------------------------------------------------------ modes, dtype, grads
def test_train_eval_apply_and_requires_grad():
    model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert model.training and model[1].training
    assert model.eval() is model
    assert not model.training and not model[1].training
    x = tk.ones(3, 2)
    np.testing.assert_array_equal(model[1](x).numpy(), x.numpy())
    model.train()
    assert model[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        model.train(1)  # type: ignore[arg-type]
    visited = []
    model.apply(lambda m: visited.append(type(m).__name__))
    assert visited == ["Linear", "Dropout", "Sequential"]
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_to_casts_floating_tensors_in_place_of_the_same_parameters():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    weight = model[0].weight
    model(tk.randn(4, 2)).sum().backward()
    assert model.to(tk.float64) is model
    assert model[0].weight is weight and weight.dtype == tk.float64
    assert weight.grad.dtype == tk.float64
    assert model[1].running_mean.dtype == tk.float64
    assert model[1].num_batches_tracked.dtype == tk.int64
    assert model(tk.randn(4, 2, dtype=tk.float64)).dtype == tk.float64
    model.float()
    assert weight.dtype == tk.float32
    model.half()
    assert weight.dtype == tk.float16
    model.double()
    assert weight.dtype == tk.float64
    model.to("cpu", dtype=tk.float32)
    assert weight.dtype == tk.float32 and weight.device == tk.device("cpu")
    model.to(tk.zeros(1, dtype=tk.float64))
    assert weight.dtype == tk.float64
    assert model.cpu() is model
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(tk.int32)


def test_zero_grad_to_none_or_zeros():
    layer = nn.Linear(2, 2)
    layer(tk.ones(1, 2)).sum().backward()
    layer.zero_grad(set_to_none=False)
    assert layer.weight.grad is not None and not layer.weight.grad.any()
    layer.zero_grad()
    assert layer.weight.grad is None and layer.bias.grad is None


def test_deepcopy_and_pickle_of_a_module():
    net = Net()
    clone = copy.deepcopy(net)
    assert clone.fc.weight is not net.fc.weight and isinstance(clone.fc.weight, nn.Parameter)
    x = tk.randn(2, 4)
    np.testing.assert_array_equal(clone(x).detach().numpy(), net(x).detach().numpy())
    restored = pickle.loads(pickle.dumps(net))
    np.testing.assert_array_equal(restored(x).detach().numpy(), net(x).detach().numpy())


# ------------------------------------------------------------------------------ printing
def test_repr_matches_torch_for_a_small_model():
    torch = pytest.importorskip("torch")

    def build(lib):
        model = lib.Sequential(
            OrderedDict(
                features=lib.Sequential(lib.Linear(4, 8), lib.ReLU(inplace=True)),
                norm=lib.BatchNorm1d(8, momentum=None),
                drop=lib.Dropout(0.25),
                blocks=lib.ModuleList([lib.Linear(8, 8) for _ in range(3)] + [lib.GELU()]),
                heads=lib.ModuleDict({"a": lib.Linear(8, 2, bias=False), "b": lib.Identity()}),
                emb=lib.Embedding(10, 3, padding_idx=0),
                ln=lib.LayerNorm((4, 3), elementwise_affine=False),
                gn=lib.GroupNorm(2, 4),
                act=lib.LeakyReLU(0.2),
                soft=lib.Softmax(dim=-1),
                flat=lib.Flatten(),
                unflat=lib.Unflatten(1, (2, 4)),
                loss=lib.CrossEntropyLoss(label_smoothing=0.1),
            )
        )
        model.add_module("inorm", lib.InstanceNorm2d(3))
        model.add_module("prelu", lib.PReLU(3))
        model.add_module("bil", lib.Bilinear(2, 3, 4))
        model.add_module("sp", lib.Softplus(beta=2.0))
        model.add_module("ht", lib.Hardtanh(-2.0, 2.0))
        model.add_module("r6", lib.ReLU6())
        model.add_module("elu", lib.ELU(alpha=0.5, inplace=True))
        model.add_module("th", lib.Threshold(0.1, 20.0))
        model.add_module("gt", lib.GELU(approximate="tanh"))
        model.add_module("silu", lib.SiLU())
        model.add_module("hs", lib.Hardshrink())
        model.add_module("rms", lib.RMSNorm(4))
        model.add_module("d2", lib.Dropout2d())
        return model

    assert repr(build(nn)) == repr(build(torch.nn))


def test_parameter_containers_repr_and_names():
    plist = nn.ParameterList([tk.zeros(2, 3), nn.Parameter(tk.ones(4))])
    assert [n for n, _ in plist.named_parameters()] == ["0", "1"]
    assert repr(plist) == (
        "ParameterList(\n"
        "    (0): Parameter containing: [tensorkit.float32 of size 2x3]\n"
        "    (1): Parameter containing: [tensorkit.float32 of size 4]\n"
        ")"
    )
    pdict = nn.ParameterDict(OrderedDict(b=tk.zeros(1), a=tk.ones(2)))
    assert list(pdict) == ["b", "a"] and isinstance(pdict["a"], nn.Parameter)
    assert [n for n, _ in pdict.named_parameters()] == ["b", "a"]
    assert "(a): Parameter containing: [tensorkit.FloatTensor of size 2]" in repr(pdict)
    del pdict["b"]
    assert list(pdict.keys()) == ["a"] and len(pdict) == 1 and "a" in pdict
    plist.append(tk.zeros(1))
    plist.extend([tk.zeros(1)])
    assert len(plist) == 4 and len(plist[1:3]) == 2 and plist[-1].shape == (1,)
    with pytest.raises(TypeError, match=r"ParameterList\.extend should be called with an iterable"):
        plist.extend(3)  # type: ignore[arg-type]


# -------------------------------------------------------------------------- containers
def test_sequential_indexing_slicing_and_editing():
    a, b, c = nn.Linear(1, 1), nn.ReLU(), nn.Tanh()
    seq = nn.Sequential(a, b)
    assert len(seq) == 2 and seq[0] is a and seq[-1] is b
    assert isinstance(seq[0:1], nn.Sequential) and list(seq[0:1]) == [a]
    seq.append(c)
    assert list(seq) == [a, b, c]
    d = nn.Sigmoid()
    seq.insert(1, d)
    assert list(seq) == [a, d, b, c] and list(seq._modules) == ["0", "1", "2", "3"]
    del seq[0]
    assert list(seq) == [d, b, c] and list(seq._modules) == ["0", "1", "2"]
    assert seq.pop(1) is b and list(seq) == [d, c]
    seq.extend([nn.Identity()])
    assert len(seq) == 3
    seq[0] = a
    assert seq[0] is a
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]
    named = nn.Sequential(OrderedDict(first=a, second=b))
    assert list(named._modules) == ["first", "second"] and named[1] is b
    assert named(tk.ones(1, 1)).shape == (1, 1)


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(1, 1) for _ in range(2)])
    layers += [nn.ReLU()]
    layers.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in layers] == ["Tanh", "Linear", "Linear", "ReLU"]
    assert isinstance(layers[1:], nn.ModuleList) and len(layers[1:]) == 3
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2"]
    with pytest.raises(NotImplementedError):
        layers(tk.ones(1))
    heads = nn.ModuleDict([("x", nn.ReLU()), ("y", nn.Tanh())])
    heads["z"] = nn.Identity()
    assert list(heads) == ["x", "y", "z"] and "y" in heads and len(heads) == 3
    assert isinstance(heads.pop("x"), nn.ReLU) and list(heads.keys()) == ["y", "z"]
    with pytest.raises(ValueError, match="has length 1; 2 is required"):
        heads.update([("w",)])
    with pytest.raises(TypeError, match="should be called with an iterable"):
        heads.update(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ tape paths
class TapeNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        self.fc1 = nn.Linear(4, 2)

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        return self.fc1(self.features(x))


def test_tape_records_module_paths():
    net = TapeNet()
    with tk.autograd.Tape() as tape:
        out = net(tk.randn(2, 3)).sum()
    paths = [(entry.name, entry.module_path) for entry in tape.entries]
    assert ("relu", "TapeNet.features.1") in paths
    assert {p for _, p in paths if p.startswith("TapeNet.features.0")} == {"TapeNet.features.0"}
    assert any(p == "TapeNet.fc1" for _, p in paths)
    assert paths[-1] == ("sum", "")
    assert out.grad_fn is not None
    with tk.autograd.Tape() as tape:
        net.fc1(tk.randn(1, 4))
    assert {entry.module_path for entry in tape.entries} == {"fc1"}


def test_full_backward_hooks_see_and_replace_gradients_like_torch():
    torch = pytest.importorskip("torch")
    mine, theirs = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mine.state_dict().items()})
    seen = {"mine": [], "theirs": []}

    def recorder(key):
        def hook(module, grad_input, grad_output):
            seen[key].append((grad_input[0].detach().numpy().copy(), grad_output[0].numpy().copy()))
            return (grad_input[0] * 2,)

        return hook

    def doubler(module, grad_output):
        return (grad_output[0] * 3,)

    for module, key in ((mine, "mine"), (theirs, "theirs")):
        module.register_full_backward_hook(recorder(key))
        module.register_full_backward_pre_hook(doubler)
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    x_mine, x_theirs = tk.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    mine(x_mine).square().sum().backward()
    theirs(x_theirs).square().sum().backward()
    for got, expected in zip(seen["mine"][0], seen["theirs"][0], strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x_mine.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        mine.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-5, atol=1e-6
    )


def test_full_backward_hook_without_input_grads_and_removal():
    layer = nn.Linear(2, 2)
    calls = []
    handle = layer.register_full_backward_hook(lambda m, gi, go: calls.append((gi, len(go))))
    layer(tk.ones(1, 2)).sum().backward()
    assert calls == [((None,), 1)]
    handle.remove()
    layer(tk.ones(1, 2)).sum().backward()
    assert len(calls) == 1


class Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
        self.heads = nn.ModuleDict({"out": nn.Linear(2, 1)})

    def forward(self, x: tk.Tensor) -> tk.Tensor:
        for layer in self.layers[1:]:  # a temporary ModuleList must not rename them
            x = layer(x)
        return self.heads["out"](x)


def test_tape_paths_of_container_members_called_by_the_parent():
    model = Stack()
    for _ in range(2):  # the second run uses the cached paths
        with tk.autograd.Tape() as tape:
            model(tk.randn(1, 2))
        paths = {entry.module_path for entry in tape.entries if entry.module_path}
        assert paths == {"Stack.layers.1", "Stack.layers.2", "Stack.heads.out"}
    wrapped = nn.Sequential(*model.layers)
    with tk.autograd.Tape() as tape:
        wrapped(tk.randn(1, 2))
    assert {e.module_path for e in tape.entries} == {"Sequential.0", "Sequential.1", "Sequential.2"}


# --------------------------------------------------------- PyTorch parity (lib = tk or torch)
def _same_as_torch(scenario, expected):
    """``scenario(lib)`` gives ``expected`` with tensorkit, and with torch when installed."""
    assert scenario(tk) == expected
    try:
        import torch
    except ImportError:
        return
    assert scenario(torch) == expected


def _module_path(lib):
    return lib.nn.modules.module


def _scrub(text):
    return text.replace("torch", "tensorkit")


def test_extra_state_is_saved_loaded_and_checked():
    def scenario(lib):
        class Counter(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = lib.nn.Linear(1, 1)
                self.count = 3

            def get_extra_state(self):
                return {"count": self.count}

            def set_extra_state(self, state):
                self.count = state["count"]

        state = Counter().state_dict()
        target = Counter()
        target.count = 0
        result = repr(target.load_state_dict(state))
        del state["_extra_state"]
        with pytest.raises(RuntimeError) as info:
            target.load_state_dict(state)
        plain = lib.nn.Linear(1, 1)
        extra = {**plain.state_dict(), "_extra_state": 1}
        with pytest.raises(RuntimeError) as unexpected:
            plain.load_state_dict(extra)
        loose = repr(plain.load_state_dict(extra, strict=False))
        return (
            list(Counter().state_dict()),
            target.count,
            result,
            str(info.value),
            loose,
            (str(unexpected.value)),
        )

    _same_as_torch(
        scenario,
        (
            ["_extra_state", "fc.weight", "fc.bias"],
            3,
            "<All keys matched successfully>",
            "Error(s) in loading state_dict for Counter:\n\t"
            'Missing key(s) in state_dict: "_extra_state". ',
            "_IncompatibleKeys(missing_keys=[], unexpected_keys=['_extra_state'])",
            "Error(s) in loading state_dict for Linear:\n\t"
            'Unexpected key(s) in state_dict: "_extra_state". ',
        ),
    )


def test_state_dict_metadata_and_hooks():
    def scenario(lib):
        calls = []
        model = lib.nn.Sequential(lib.nn.Linear(1, 1))
        model.register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre", prefix)))
        model[0].register_state_dict_pre_hook(lambda m, prefix, keep: calls.append(("pre0", keep)))

        def post(module, state, prefix, local_metadata):
            calls.append(("post", prefix, dict(local_metadata)))
            state[prefix + "note"] = 1

        handle = model[0].register_state_dict_post_hook(post)
        state = model.state_dict(keep_vars=True)
        first_calls = calls[:]
        handle.remove()
        keys_after_removal = list(model.state_dict())
        model.register_state_dict_post_hook(lambda *args: {})
        with pytest.raises(RuntimeError) as must_return_none:
            model.state_dict()
        old_style = lib.nn.Linear(1, 1)
        old_style._register_state_dict_hook(lambda m, state, prefix, meta: {"replaced": 1})
        with pytest.raises(RuntimeError) as public_twice:
            old_style._register_state_dict_hook(post)
        return (
            first_calls,
            list(state),
            dict(state._metadata),
            keys_after_removal,
            str(must_return_none.value),
            list(old_style.state_dict()),
            str(public_twice.value),
        )

    _same_as_torch(
        scenario,
        (
            [("pre", ""), ("pre0", True), ("post", "0.", {"version": 1})],
            ["0.weight", "0.bias", "0.note"],
            {"": {"version": 1}, "0": {"version": 1}},
            ["0.weight", "0.bias"],
            "state_dict post-hook must return None",
            ["replaced"],
            "Cannot register the same function as the state dict post hook that was previously "
            "registered via register_state_dict_post_hook",
        ),
    )


def test_load_state_dict_hooks_see_and_edit_keys():
    def scenario(lib):
        calls = []
        model = lib.nn.Sequential(OrderedDict(a=lib.nn.Linear(1, 1), b=lib.nn.Linear(1, 1)))

        def rename(module, state, prefix, local_metadata, strict, missing, unexpected, errors):
            calls.append(("pre", type(module).__name__, prefix, sorted(state), local_metadata))
            if "old" in state:
                state[prefix + "weight"] = state.pop("old")

        def forgive(module, incompatible):
            calls.append(("post", incompatible.missing_keys[:], incompatible.unexpected_keys[:]))
            incompatible.unexpected_keys.clear()

        model.a.register_load_state_dict_pre_hook(rename)
        model._register_load_state_dict_pre_hook(lambda state, prefix, *rest: calls.append(prefix))
        model.register_load_state_dict_post_hook(forgive)
        model.b.register_load_state_dict_post_hook(lambda m, inc: calls.append(inc.missing_keys[:]))
        state = model.state_dict()
        state["stray"] = lib.zeros(1)
        result = repr(model.load_state_dict(state))
        loose = repr(model.load_state_dict({"a.weight": lib.ones(1, 1)}, strict=False))
        single = lib.nn.Linear(1, 1)
        single.register_load_state_dict_pre_hook(rename)
        single.load_state_dict({"old": lib.full((1, 1), 5.0), "bias": lib.zeros(1)}, assign=True)
        single.register_load_state_dict_post_hook(lambda m, inc: inc)
        with pytest.raises(AssertionError) as info:
            single.load_state_dict(single.state_dict())
        return calls, result, loose, single.weight.item(), str(info.value)

    expected_calls = [
        "",
        ("pre", "Linear", "a.", ["a.bias", "a.weight"], {"version": 1}),
        [],
        ("post", [], ["stray"]),
        "",
        ("pre", "Linear", "a.", ["a.weight"], {}),
        ["a.bias", "b.weight", "b.bias"],
        ("post", ["a.bias", "b.weight", "b.bias"], []),
        ("pre", "Linear", "", ["bias", "old"], {"assign_to_params_buffers": True}),
        ("pre", "Linear", "", ["bias", "weight"], {"version": 1}),
    ]
    _same_as_torch(
        scenario,
        (
            expected_calls,
            "<All keys matched successfully>",
            "_IncompatibleKeys(missing_keys=['a.bias', 'b.weight', 'b.bias'], unexpected_keys=[])",
            5.0,
            "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
            "return new values, if incompatible_keys need to be modified, it should be done "
            "inplace.",
        ),
    )


def test_load_pre_hook_of_a_dead_module_raises():
    from tensorkit.nn.modules.module import _WrappedHook

    hook = _WrappedHook(lambda module: module, nn.Linear(1, 1))
    with pytest.raises(RuntimeError, match="You are trying to call the hook of a dead Module!"):
        hook()


def test_hooks_survive_pickle_and_deepcopy():
    model = nn.Linear(1, 1)
    model.register_load_state_dict_pre_hook(_noop)
    model.register_state_dict_post_hook(_noop)
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        (hook,) = clone._load_state_dict_pre_hooks.values()
        assert hook.module() is clone and len(clone._state_dict_hooks) == 1
    old = Net()
    for name in ("_state_dict_hooks", "_load_state_dict_pre_hooks"):
        del old.__dict__[name]  # as pickled before these existed
    restored = pickle.loads(pickle.dumps(old))
    assert list(restored.state_dict()) == list(Net().state_dict())


def _noop(*args):
    return None


def test_global_forward_and_backward_hooks_run_before_the_modules_own():
    def scenario(lib):
        hooks, calls = _module_path(lib), []
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
        model[0].register_forward_pre_hook(lambda m, a: calls.append("own pre"))
        model[0].register_forward_hook(lambda m, a, out: calls.append("own hook"))
        model[0].register_full_backward_hook(lambda m, gi, go: calls.append("own backward"))
        name = lambda m: type(m).__name__  # noqa: E731
        handles = [
            hooks.register_module_forward_pre_hook(lambda m, a: calls.append(("pre", name(m)))),
            hooks.register_module_forward_hook(lambda m, a, out: calls.append(("hook", name(m)))),
            hooks.register_module_forward_hook(
                lambda m, a, k, out: calls.append(("kw", k)), with_kwargs=True
            ),
            hooks.register_module_full_backward_pre_hook(
                lambda m, go: calls.append(("bpre", name(m), len(go)))
            ),
            hooks.register_module_full_backward_hook(
                lambda m, gi, go: calls.append(("bwd", name(m), len(gi)))
            ),
        ]
        try:
            model(lib.ones(1, 2, requires_grad=True)).sum().backward()
        finally:
            for handle in handles:
                handle.remove()
        calls.append("removed")
        model(lib.ones(1, 2))
        doubling = hooks.register_module_forward_pre_hook(lambda m, a: a[0] * 2)
        with doubling, hooks.register_module_forward_hook(lambda m, a, out: out + 1):
            replaced = lib.nn.Identity()(lib.ones(1)).item()
        return calls, replaced

    _same_as_torch(
        scenario,
        (
            [
                ("pre", "Sequential"),
                ("pre", "Linear"),
                "own pre",
                ("hook", "Linear"),
                ("kw", {}),
                "own hook",
                ("pre", "ReLU"),
                ("hook", "ReLU"),
                ("kw", {}),
                ("hook", "Sequential"),
                ("kw", {}),
                ("bpre", "Sequential", 1),
                ("bpre", "ReLU", 1),
                ("bwd", "ReLU", 1),
                ("bpre", "Linear", 1),
                ("bwd", "Linear", 1),
                "own backward",
                ("bwd", "Sequential", 1),
                "removed",
                "own pre",
                "own hook",
            ],
            3.0,
        ),
    )


def test_global_full_backward_hook_replaces_gradients_like_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(1).standard_normal((4, 3))

    def run(lib, module, tensor):
        hooks = _module_path(lib)
        pre = hooks.register_module_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        post = hooks.register_module_full_backward_hook(lambda m, gi, go: (gi[0] * 2,))
        with pre, post:
            module(tensor).square().sum().backward()
        return tensor.grad.numpy(), module.weight.grad.numpy()

    mine = nn.Linear(3, 2).double()
    theirs = torch.nn.Linear(3, 2).double()
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in mine.state_dict().items()})
    got = run(tk, mine, tk.tensor(x, requires_grad=True))
    expected = run(torch, theirs, torch.tensor(x, requires_grad=True))
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_global_always_call_hook_runs_when_forward_raises():
    def scenario(lib):
        seen = []

        class Broken(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        hooks = _module_path(lib)
        recording = hooks.register_module_forward_hook(
            lambda m, a, out: seen.append(out), always_call=True
        )
        with recording, pytest.raises(ValueError, match="boom"):
            Broken()(1)
        failing = hooks.register_module_forward_hook(lambda m, a, out: 1 / 0, always_call=True)
        with failing, pytest.warns(UserWarning) as warned, pytest.raises(ValueError, match="boom"):
            Broken()(1)
        return seen, str(warned[0].message)

    _same_as_torch(
        scenario,
        (
            [None],
            "global module forward hook with ``always_call=True`` raised an exception that was "
            "silenced as another error was raised in forward: division by zero",
        ),
    )


def test_global_registration_hooks_see_and_replace_values():
    def scenario(lib):
        hooks, calls = _module_path(lib), []
        record = lambda kind: lambda m, name, value: calls.append((kind, name))  # noqa: E731
        handles = [
            hooks.register_module_parameter_registration_hook(record("param")),
            hooks.register_module_buffer_registration_hook(record("buffer")),
            hooks.register_module_module_registration_hook(record("module")),
        ]
        try:
            layer = lib.nn.Linear(1, 1, bias=False)  # a None parameter runs no hook
            layer.bias = None
            holder = lib.nn.Module()
            holder.register_buffer("stat", lib.zeros(1))
            holder.stat = None
            holder.child = lib.nn.ReLU()
            holder.add_module("other", lib.nn.Tanh())
            holder.child = None
            holder.scale = lib.nn.Parameter(lib.zeros(1))
        finally:
            for handle in handles:
                handle.remove()
        lib.nn.Linear(1, 1)
        seven = lambda m, name, p: lib.nn.Parameter(lib.full((1,), 7.0))  # noqa: E731
        with hooks.register_module_parameter_registration_hook(seven):
            holder.scale = lib.nn.Parameter(lib.zeros(1))
        with hooks.register_module_module_registration_hook(lambda m, n, s: lib.nn.Tanh()):
            holder.child = lib.nn.ReLU()
        return calls, holder.scale.item(), type(holder.child).__name__

    _same_as_torch(
        scenario,
        (
            [
                ("param", "weight"),
                ("buffer", "stat"),
                ("buffer", "stat"),
                ("module", "child"),
                ("module", "other"),
                ("module", "child"),
                ("param", "scale"),
            ],
            7.0,
            "Tanh",
        ),
    )


def test_to_empty_moves_without_copying_and_keeps_parameters():
    def scenario(lib):
        model = lib.nn.Sequential(lib.nn.Linear(2, 3))
        weight = model[0].weight
        returned = model.to_empty(device="cpu", recurse=False)
        model.to_empty(device="cpu")
        return (
            returned is model,
            model[0].weight is weight,
            tuple(model[0].weight.shape),
            model[0].weight.requires_grad,
        )

    _same_as_torch(scenario, (True, True, (3, 2), True))


def test_dir_lists_parameters_buffers_and_submodules():
    names = dir(Net())
    assert {"scale", "steps", "scratch", "features", "fc", "state_dict"} <= set(names)
    assert names == sorted(names) and "0" not in dir(nn.Sequential(nn.ReLU()))


def test_sequential_add_multiply_and_errors():
    def scenario(lib):
        a, b = lib.nn.ReLU(), lib.nn.Linear(1, 1)
        first, second = lib.nn.Sequential(a), lib.nn.Sequential(b)
        joined = first + second
        first += second
        doubled = 2 * joined
        tripled = lib.nn.Sequential(a, b)
        tripled *= 3
        errors = []
        for bad in (lambda: joined + [a], lambda: joined * 0, lambda: joined * 1.5):
            with pytest.raises((TypeError, ValueError)) as info:
                bad()
            errors.append((info.type.__name__, _scrub(str(info.value))))
        with pytest.raises(ValueError):
            first += 3
        return (
            [type(m).__name__ for m in joined],
            list(first._modules),
            [m is n for m, n in zip(doubled, [a, b, a, b], strict=True)],
            len(tripled),
            len(list(tripled.parameters())),
            errors,
        )

    _same_as_torch(
        scenario,
        (
            ["ReLU", "Linear"],
            ["0", "1"],
            [True, True, True, True],
            6,
            2,
            [
                (
                    "ValueError",
                    "add operator supports only objects of Sequential class, but <class 'list'> "
                    "is given.",
                ),
                (
                    "ValueError",
                    "Non-positive multiplication factor 0 for <class "
                    "'tensorkit.nn.modules.container.Sequential'>",
                ),
                (
                    "TypeError",
                    "unsupported operand type(s) for *: <class "
                    "'tensorkit.nn.modules.container.Sequential'> and <class 'float'>",
                ),
            ],
        ),
    )


def test_container_editing_matches_torch():
    def scenario(lib):
        nn_ = lib.nn
        seq = nn_.Sequential(nn_.ReLU(), nn_.Tanh(), nn_.Sigmoid(), nn_.Identity())
        del seq[1:3]
        seq.insert(-1, nn_.ELU())
        popped = seq.pop(0)
        seq.extend([nn_.ReLU()])
        layers = nn_.ModuleList([nn_.ReLU(), nn_.Tanh()])
        inserted = layers.insert(1, nn_.Sigmoid())
        joined = layers + [nn_.ELU()]
        layers.pop(0)
        heads = nn_.ModuleDict({"b": nn_.ReLU(), "a": nn_.Tanh()})
        heads.update([("c", nn_.ELU())])
        order = (list(heads.keys()), [type(m).__name__ for m in heads.values()])
        items = [k for k, _ in heads.items()]
        heads.clear()
        return (
            repr(seq),
            repr(popped),
            inserted,
            repr(layers),
            repr(joined),
            repr(joined[1:3]),
            order,
            items,
            len(heads),
        )

    _same_as_torch(
        scenario,
        (
            "Sequential(\n  (0): ELU(alpha=1.0)\n  (1): Identity()\n  (2): ReLU()\n)",
            "ReLU()",
            None,
            "ModuleList(\n  (0): Sigmoid()\n  (1): Tanh()\n)",
            "ModuleList(\n  (0): ReLU()\n  (1): Sigmoid()\n  (2): Tanh()\n  (3): ELU(alpha=1.0)\n)",
            "ModuleList(\n  (0): Sigmoid()\n  (1): Tanh()\n)",
            (["b", "a", "c"], ["ReLU", "Tanh", "ELU"]),
            ["b", "a", "c"],
            0,
        ),
    )


def test_parameter_dict_methods_and_repr_match_torch():
    def scenario(lib):
        nn_ = lib.nn
        plain = nn_.ParameterDict({"b": lib.zeros(2), "a": lib.ones(3, 2, dtype=lib.float64)})
        plain["c"] = 3
        first = nn_.ParameterDict({"b": lib.zeros(1)})
        second = nn_.ParameterDict(OrderedDict(z=lib.zeros(2), a=3))
        merged = first | second
        first |= second
        copied = second.copy()
        copied.setdefault("k", lib.ones(1))
        last = copied.popitem()[0]
        made = first.fromkeys(["x", "y"], 2)
        return (
            _scrub(repr(plain)),
            list(merged),
            list(first),
            list(reversed(copied)),
            last,
            list(made.items()),
            plain.get("missing", 0),
            _scrub(repr(nn_.ParameterList([lib.zeros(2), 3]))),
            repr(nn_.ParameterDict()),
        )

    _same_as_torch(
        scenario,
        (
            "ParameterDict(\n"
            "    (a): Parameter containing: [tensorkit.DoubleTensor of size 3x2]\n"
            "    (b): Parameter containing: [tensorkit.FloatTensor of size 2]\n"
            "    (c): Object of type: int\n"
            ")",
            ["b", "z", "a"],
            ["b", "z", "a"],
            ["a", "z"],
            "k",
            [("x", 2), ("y", 2)],
            0,
            "ParameterList(\n"
            "    (0): Parameter containing: [tensorkit.float32 of size 2]\n"
            "    (1): Object of type: int\n"
            ")",
            "ParameterDict()",
        ),
    )


def test_parameter_container_misuse_errors():
    def scenario(lib):
        nn_, errors = lib.nn, []
        attempts = (
            lambda: nn_.ParameterDict()(1),
            lambda: nn_.ParameterList()(1),
            lambda: nn_.ParameterDict().update(3),
            lambda: nn_.ParameterDict().update([3]),
            lambda: nn_.ModuleDict().update([3]),
            lambda: nn_.ParameterDict()[3],
            lambda: nn_.ParameterDict().popitem(),
        )
        for attempt in attempts:
            with pytest.raises(Exception) as info:
                attempt()
            errors.append((info.type.__name__, str(info.value)))
        return errors

    _same_as_torch(
        scenario,
        [
            ("RuntimeError", "ParameterDict should not be called."),
            ("RuntimeError", "ParameterList should not be called."),
            (
                "TypeError",
                "ParametersDict.update should be called with an iterable of key/value pairs, "
                "but got int",
            ),
            ("TypeError", "ParameterDict update sequence element #0 should be Iterable; isint"),
            ("TypeError", "ModuleDict update sequence element #0 should be Iterable; isint"),
            (
                "TypeError",
                "Index given to ParameterDict cannot be used as a key as it is not a string "
                "(type is 'int'). Open an issue on github if you need non-string keys.",
            ),
            ("KeyError", "'popitem(): dictionary is empty'"),
        ],
    )
