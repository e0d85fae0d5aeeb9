"""`coding.digest` reads a tensor of any layout by its values (#44): strides, views, dtypes, shapes.

The digest a check keeps of a reference result must not depend on how the result is laid out in
memory (a slice, a transpose, an expanded or `as_strided` view, a one-element view with a stride
of 2) and must change when any value changes.
"""

import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from d2lmini.exercises.coding import digest

pytestmark = pytest.mark.torch_dependent

DTYPES = (torch.float16, torch.float32, torch.float64, torch.bfloat16, torch.int8, torch.int64, torch.uint8,
          torch.bool, torch.complex64, torch.complex128)
VIEWS = ("as it is", "every other entry", "transposed", "expanded", "as_strided", "one entry, stride 2",
         "conjugate")


def _base(dtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(2, shape, generator=generator).bool()
    if not (dtype.is_floating_point or dtype.is_complex):
        return torch.randint(0, 100, shape, generator=generator).to(dtype)
    return torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)


def _view(tensor: torch.Tensor, view: str) -> torch.Tensor:
    if view == "every other entry" and tensor.dim():
        return tensor[..., ::2]
    if view == "transposed" and tensor.dim() >= 2:
        return tensor.transpose(0, -1)
    if view == "expanded":
        return tensor.unsqueeze(0).expand(3, *tensor.shape)
    if view == "as_strided" and tensor.numel() >= 4:
        return tensor.reshape(-1).as_strided((2, 2), (1, 2))  # overlapping rows of the flat storage
    if view == "one entry, stride 2" and tensor.numel():
        return tensor.reshape(-1).repeat(2)[:2].as_strided((1,), (2,))
    if view == "conjugate" and tensor.dtype.is_complex:
        return tensor.conj()
    return tensor


def _changed(tensor: torch.Tensor, index: int) -> torch.Tensor:
    """A contiguous copy of `tensor` with its entry `index` (flat) changed."""
    changed = tensor.clone().contiguous()
    flat = changed.view(-1)
    flat[index] = ~flat[index] if tensor.dtype == torch.bool else flat[index] + 1
    return changed


@settings(max_examples=300, deadline=None)
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
       view=st.sampled_from(VIEWS), seed=st.integers(0, 2**16), where=st.integers(0, 10**6))
@example(dtype=torch.float32, shape=(1, 2), view="as it is", seed=0, where=0)
def test_the_digest_reads_values_not_layout(dtype, shape, view, seed, where):
    tensor = _view(_base(dtype, shape, seed), view)
    assert digest(tensor) == digest(tensor.clone().contiguous())
    if tensor.numel():
        assert digest(_changed(tensor, where % tensor.numel())) != digest(tensor)


def test_a_one_element_strided_view_is_digested():
    """The case of #44: a valid one-element reference whose stride is not 1."""
    value = torch.softmax(torch.randn(1, 2), -1)[..., 0]
    assert value.stride() != (1,)
    assert digest(value) == digest(value.clone().contiguous())
    assert digest(value) != digest(value + 1)


def test_the_digest_tells_dtype_and_shape_apart():
    assert digest(torch.zeros(2, 3)) != digest(torch.zeros(3, 2))
    assert digest(torch.zeros(2)) != digest(torch.zeros(2, dtype=torch.float64))
    assert digest(torch.zeros(0)) != digest(torch.zeros(()))
