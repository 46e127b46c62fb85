"""The broker-wide receive budget: limit, overdraft, the line of waiters."""

from __future__ import annotations

from broker.server.budget import ReceiveBudget


class Waiter:
    """Retries by asking the budget for ``want`` bytes (as a growing frame)."""

    def __init__(self, budget: ReceiveBudget, want: int, name: str) -> None:
        self.budget = budget
        self.want = want
        self.name = name
        self.granted = 0
        self.log: list[str] = []

    def ask(self) -> bool:
        if self.budget.try_acquire(self, self.want, overdraft=True):
            self.granted += self.want
            return True
        return False

    def budget_available(self) -> bool:
        self.log.append("retry")
        return self.ask()


def test_bytes_within_the_limit_are_granted_and_given_back() -> None:
    budget = ReceiveBudget(100)
    w = Waiter(budget, 60, "a")
    assert budget.try_acquire(w, 60, overdraft=False)
    assert budget.try_acquire(w, 40, overdraft=False)
    assert budget.used == 100
    assert not budget.try_acquire(w, 1, overdraft=False)
    budget.release(100)
    assert budget.used == 0


def test_one_connection_at_a_time_may_finish_its_frame_beyond_the_limit() -> None:
    budget = ReceiveBudget(100)
    a, b = Waiter(budget, 80, "a"), Waiter(budget, 80, "b")
    assert a.ask() and not budget.holds_overdraft(a)
    # b is refused the room, but takes the overdraft: no one holds it
    assert b.ask() and budget.holds_overdraft(b)
    assert budget.used == 160
    # the overdraft is b's for as long as its frame grows
    assert b.ask() and budget.used == 240
    # and nobody else's
    c = Waiter(budget, 10, "c")
    assert not c.ask()
    budget.end_overdraft(b)
    assert not budget.holds_overdraft(b)
    assert c.ask() and budget.holds_overdraft(c)


def test_the_overdraft_is_not_taken_for_a_frame_already_received() -> None:
    budget = ReceiveBudget(10)
    w = Waiter(budget, 20, "w")
    assert not budget.try_acquire(w, 20, overdraft=False)
    assert budget.used == 0


def test_waiters_retry_in_line_when_bytes_come_back() -> None:
    budget = ReceiveBudget(100)
    holder = Waiter(budget, 100, "holder")
    assert holder.ask()
    first = Waiter(budget, 50, "first")
    assert first.ask() and budget.holds_overdraft(first)  # over the limit: the overdraft
    second, third = Waiter(budget, 50, "second"), Waiter(budget, 60, "third")
    for w in (second, third):
        assert not w.ask()
        budget.wait(w)
    assert budget.waiting == 2
    budget.release(100)  # holder leaves: 50 used (first's overdraft), 50 free
    assert second.granted == 50 and budget.waiting == 1
    # nothing left and the overdraft is out: third is not even asked
    assert third.log == [] and third.granted == 0
    assert budget.tight()
    budget.end_overdraft(first)  # first's frame was answered: the overdraft is free
    assert third.granted == 60 and budget.waiting == 0
    assert budget.holds_overdraft(third)


def test_a_refused_head_of_the_line_stops_the_retries_behind_it() -> None:
    budget = ReceiveBudget(100)
    big = Waiter(budget, 100, "big")
    assert big.ask()
    assert Waiter(budget, 1, "x").ask()  # the overdraft is out
    head, behind = Waiter(budget, 90, "head"), Waiter(budget, 5, "behind")
    for w in (head, behind):
        assert not w.ask()
        budget.wait(w)
    budget.release(20)  # 81 used: head (90) does not fit, behind (5) would
    assert head.log == ["retry"] and behind.log == []  # first come, first served
    budget.leave(head)
    budget.release(1)
    assert behind.granted == 5


def test_tight_once_more_than_half_is_used() -> None:
    budget = ReceiveBudget(100)
    budget.charge(50)
    assert not budget.tight()
    budget.charge(1)
    assert budget.tight()
