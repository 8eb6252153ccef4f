"""The input checks every model shares: one place that turns the arrays a caller passes into the
arrays the training code trusts, or raises ``ValueError`` naming the function, the argument and
the offending value (its position too, so a bad row in a million can be found)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyarrow as pa


def _numpy(function: str, name: str, values: object) -> np.ndarray:
    """``values`` as a one-dimensional numpy array (Arrow arrays included, their nulls refused:
    an id or rating that is not there cannot be trained on)."""
    if isinstance(values, pa.ChunkedArray | pa.Array):
        if values.null_count:
            position = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise ValueError(f"{function}: {name} has a null at position {position} "
                             f"({values.null_count} nulls)")
        values = values.to_numpy(zero_copy_only=False)
    if np.ma.isMaskedArray(values) and np.ma.getmaskarray(values).any():  # DuckDB's fetchnumpy
        missing = np.flatnonzero(np.ma.getmaskarray(values))
        raise ValueError(f"{function}: {name} has a null at position {int(missing[0])} "
                         f"({missing.size} nulls)")
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{function}: {name} must be one-dimensional, got shape {array.shape}")
    return array


def _finite(value: int | float | np.number) -> bool:
    """math.isfinite, False for an int too large for a float (isfinite raises OverflowError)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _plain(value: object) -> object:
    """A numpy scalar as the Python value it holds, so messages show 5.0, not np.float64(5.0)."""
    return value.item() if isinstance(value, np.generic) else value


def ids(function: str, name: str, values: object) -> np.ndarray:
    """User or item ids, kept as given: integers (as int64) or strings."""
    array = _numpy(function, name, values)
    if array.dtype.kind in "iu":
        if array.dtype == np.uint64 and array.size and array.max() > np.iinfo(np.int64).max:
            raise ValueError(f"{function}: {name} has id {_plain(array.max())} beyond "
                             "the int64 range")
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "U":
        return array
    if array.dtype.kind == "T":  # numpy's StringDType: pyarrow takes it as Python strings
        array = array.astype(object)
    if array.dtype.kind == "O":
        return _object_ids(function, name, array)
    raise ValueError(f"{function}: {name} must hold int64 or string ids, got dtype {array.dtype}")


def _is_integer(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _object_ids(function: str, name: str, array: np.ndarray) -> np.ndarray:
    """Ids in an object array (a list with a None, a pandas object column): all strings (kept),
    or all integers (as int64). The error names the first element that is neither (a None, a
    float), else the first that differs in kind from the first element (ids mixing integers and
    strings): its position and value, never a valid id before it."""
    text = np.fromiter((isinstance(value, str) for value in array), bool, len(array))
    if text.all():
        return array
    integer = np.fromiter((_is_integer(value) for value in array), bool, len(array))
    neither = np.flatnonzero(~(text | integer))
    if neither.size:
        position = int(neither[0])
        raise ValueError(f"{function}: {name} must hold int64 or string ids; "
                         f"{name}[{position}] is {_plain(array[position])!r} "
                         f"({neither.size} values are neither)")
    if text.any():
        position = int(np.flatnonzero(text != text[0])[0])
        raise ValueError(f"{function}: {name} mixes integer and string ids: {name}[0] is "
                         f"{_plain(array[0])!r}, {name}[{position}] is "
                         f"{_plain(array[position])!r}; give one kind")
    low, high = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    outside = np.flatnonzero([not low <= value <= high for value in array])
    if outside.size:
        position = int(outside[0])
        raise ValueError(f"{function}: {name}[{position}] is {_plain(array[position])!r}, "
                         "beyond the int64 range")
    return array.astype(np.int64)


def same_length(function: str, **arrays: np.ndarray) -> int:
    """The common length of ``arrays``; an error if they differ or are empty."""
    lengths = {name: len(array) for name, array in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name} has {length}" for name, length in lengths.items())
        raise ValueError(f"{function}: the input arrays differ in length ({listed})")
    length = next(iter(lengths.values()))
    if length == 0:
        raise ValueError(f"{function}: empty input ({', '.join(lengths)} have no rows)")
    return length


def ratings(function: str, values: object, max_rating: float | None) -> tuple[np.ndarray, float]:
    """Graded ratings as float64 in [0, max_rating], and max_rating (the largest rating given
    when None)."""
    array = _numpy(function, "ratings", values)
    if array.dtype.kind == "O":  # e.g. a list holding a None: the first non-number is named
        number = np.fromiter((isinstance(value, int | float | np.integer | np.floating)
                              and not isinstance(value, bool | np.bool_) for value in array),
                             bool, len(array))
        if not number.all():
            wrong = np.flatnonzero(~number)
            position = int(wrong[0])
            raise ValueError(f"{function}: ratings must be numbers; ratings[{position}] is "
                             f"{_plain(array[position])!r} ({wrong.size} values are not numbers)")
        huge = np.flatnonzero([_is_integer(value) and not _finite(value) for value in array])
        if huge.size:
            raise ValueError(f"{function}: ratings[{int(huge[0])}] is beyond the float64 range")
        array = array.astype(np.float64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{function}: ratings must be numbers, got dtype {array.dtype}")
    array = array.astype(np.float64, copy=False)
    missing = np.flatnonzero(np.isnan(array))
    if missing.size:
        raise ValueError(f"{function}: ratings has NaN at position {int(missing[0])} "
                         f"({missing.size} NaN values)")
    if max_rating is None:
        top = float(array.max()) if array.size else math.nan
        if not (math.isfinite(top) and top > 0):
            raise ValueError(f"{function}: max_rating=None takes the largest rating, which must "
                             f"be a finite number > 0, got {top}")
        max_rating = top
    elif isinstance(max_rating, bool) or not isinstance(max_rating, int | float) or not (
            _finite(max_rating) and max_rating > 0):
        raise ValueError(f"{function}: max_rating must be a finite number > 0, got {max_rating!r}")
    outside = np.flatnonzero((array < 0) | (array > max_rating))
    if outside.size:
        position = int(outside[0])
        raise ValueError(f"{function}: ratings[{position}] = {_plain(array[position])!r} "
                         f"is outside "
                         f"[0, max_rating={max_rating!r}] ({outside.size} ratings outside)")
    return array, float(max_rating)


@dataclass(frozen=True)
class Pairs:
    """(user, item) rows as 0-based codes into the sorted distinct ids."""

    user_ids: np.ndarray
    item_ids: np.ndarray
    users: np.ndarray
    items: np.ndarray


def pairs(function: str, users: object, items: object) -> Pairs:
    """Codes for (user, item) rows; a pair given twice is an error (it would count twice in the
    objective, which sums over the distinct rated items of each user)."""
    user_array, item_array = ids(function, "users", users), ids(function, "items", items)
    same_length(function, users=user_array, items=item_array)
    user_ids, user_codes = np.unique(user_array, return_inverse=True)
    item_ids, item_codes = np.unique(item_array, return_inverse=True)
    keys = user_codes.astype(np.int64) * len(item_ids) + item_codes
    order = np.argsort(keys, kind="stable")
    repeated = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if repeated.size:
        first, second = int(order[repeated[0]]), int(order[repeated[0] + 1])
        raise ValueError(f"{function}: the (user, item) pair ({_plain(user_array[first])!r}, "
                         f"{_plain(item_array[first])!r}) is given twice (rows "
                         f"{min(first, second)} and {max(first, second)}); give each pair once")
    return Pairs(user_ids, item_ids, user_codes.astype(np.int64), item_codes.astype(np.int64))


def _integer(function: str, name: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
        raise ValueError(f"{function}: {name} must be an integer >= {least}, got {value!r}")
    return int(value)


def _number(function: str, name: str, value: object, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not (
            _finite(value) and (value > 0 if positive else value >= 0)):
        bound = "> 0" if positive else ">= 0"
        raise ValueError(f"{function}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Settings:
    """Checked training settings."""

    dims: int
    regularization: float
    learning_rate: float
    epochs: int
    seed: int


def settings(function: str, dims: object, regularization: object, learning_rate: object,
             epochs: object, seed: object) -> Settings:
    return Settings(
        dims=_integer(function, "dims", dims, 1),
        regularization=_number(function, "regularization", regularization, positive=False),
        learning_rate=_number(function, "learning_rate", learning_rate, positive=True),
        epochs=_integer(function, "epochs", epochs, 1),
        seed=_integer(function, "seed", seed, 0),
    )
