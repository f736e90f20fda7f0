"""The Ray executor's parts that need no cluster: the endpoint slots' bookkeeping (a plain class
that Ray runs as an actor) and the sealing of keys for the job's runtime env."""

from __future__ import annotations

import asyncio

import pytest

from agentrig.run.ray.secrets import PREFIX, seal, unseal
from agentrig.run.ray.slots import EndpointSlots


async def test_slots_bound_hand_over_in_order_and_a_lost_holder_gives_its_slots_back():
    slots = EndpointSlots(2)
    await slots.acquire("a")
    await slots.acquire("a")
    waiting_b = asyncio.create_task(slots.acquire("b"))
    waiting_c = asyncio.create_task(slots.acquire("c"))
    await asyncio.sleep(0)
    assert not waiting_b.done() and not waiting_c.done()
    assert (await slots.stats())["in_use"] == 2 and (await slots.stats())["waiting"] == 2
    assert await slots.release_all("a") == 2  # worker "a" died holding both
    await asyncio.wait_for(asyncio.gather(waiting_b, waiting_c), 5)
    s = await slots.stats()
    assert s["in_use"] == 2 and s["peak"] == 2 and s["waiting"] == 0 and s["granted"] == 4
    await slots.release("b")
    await slots.release("c")
    assert (await slots.stats())["in_use"] == 0


async def test_a_cancelled_wait_takes_no_slot_and_a_dead_holders_waits_are_dropped():
    slots = EndpointSlots(1)
    await slots.acquire("a")
    waiting = asyncio.create_task(slots.acquire("b"))
    dead = asyncio.create_task(slots.acquire("x"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert await slots.release_all("x") == 0  # "x" held nothing; its wait is dropped
    with pytest.raises(asyncio.CancelledError):
        await dead
    await slots.release("a")
    s = await slots.stats()
    assert s["in_use"] == 0 and s["waiting"] == 0
    await slots.acquire("d")  # the slot is free again
    assert (await slots.stats())["in_use"] == 1


def test_sealed_keys_say_nothing_without_the_pads_and_unseal_with_them():
    secret = {"GATEWAY_KEY": "sk-live-Qw8Er7Ty6Ui5Op4", "HDR": "token-123"}
    sealed, pads = seal(secret)
    assert set(sealed) == {PREFIX + "GATEWAY_KEY", PREFIX + "HDR"}
    blob = repr(sealed)
    assert "sk-live" not in blob and "Qw8Er7" not in blob and "token-123" not in blob
    assert unseal(pads, sealed) == secret
    again, _ = seal(secret)
    assert again != sealed  # a new pad every run
    assert unseal(pads, again) != secret  # the wrong pad gives nothing
