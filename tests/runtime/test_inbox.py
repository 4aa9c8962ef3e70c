"""The loop's inbox: waking the loop, and handing a batch over in place while it is parked."""

from __future__ import annotations

import anyio

from stdio_executor.runtime.inbox import Eof, Inbox, InboxItem, SignalReceived


async def _parked(inbox: Inbox, got: list[list[InboxItem]]) -> None:
    got.append(await inbox.get_all())


def test_a_parked_loop_has_the_batch_and_what_it_leads_to_handled_in_place() -> None:
    async def main() -> None:
        inbox = Inbox()
        handled: list[list[InboxItem]] = []
        got: list[list[InboxItem]] = []

        def handle(items: list[InboxItem]) -> None:
            handled.append(items)
            if len(handled) == 1:
                inbox.put(SignalReceived(2))  # what an inline call's result does

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_parked, inbox, got)
                await anyio.wait_all_tasks_blocked()
                assert inbox.serve_here([Eof()], handle)
                # Handled in rounds, in order; the parked wait was never woken for them.
                assert handled == [[Eof()], [SignalReceived(2)]]
                assert not inbox.pending
                await anyio.wait_all_tasks_blocked()
                assert got == []
                inbox.wake()  # a bare wake: the loop re-checks its state, with nothing
        assert got == [[]]

    anyio.run(main)


def test_nothing_is_handled_in_place_unless_the_loop_is_parked_on_an_empty_inbox() -> None:
    async def main() -> None:
        inbox = Inbox()
        handled: list[list[InboxItem]] = []
        # Not waiting at all (the loop is busy): the caller queues the batch.
        assert not inbox.serve_here([Eof()], handled.append)
        got: list[list[InboxItem]] = []
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_parked, inbox, got)
                await anyio.wait_all_tasks_blocked()
                inbox.put(SignalReceived(15))
                # Woken, not yet run: an older item is queued, so a newer one must wait
                # behind it in the loop's own order.
                assert not inbox.serve_here([Eof()], handled.append)
        assert handled == []
        assert got == [[SignalReceived(15)]]

    anyio.run(main)
