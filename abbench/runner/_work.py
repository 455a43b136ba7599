"""The work of one runner pass, held a page at a time: its work items, and the cases they run on.

A pass over 100,000 cases × 3 rounds × 2 arms must not hold 600,000 work items nor every case: the
items come from the store in pages (`store.runs.work_pages`), in the order the scheduler runs them, and a
case is read with the page of cases around it when a run first needs it (`CasePages`).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping

from abbench.store import Store, WorkItem
from abbench.types import Case

PAGE_CASES = 2048
"""Cases per page: of work items (one round of them, every arm), and of cases read at once."""

KEEP_PAGES = 4
"""Pages of cases kept: the runs in flight at once lie within a page or two in the scheduler's order
(round, case, arm); an older page is read again if a run still needs it (a slow retry, pairwise judging)."""


class WorkQueue:
    """The work items of a pass in order, taken from the front: a deque refilled a page at a time.

    Args:
        pages: The items, page after page (`store.runs.work_pages`, or one list holding them all).
        on_page: Told of each page as it is taken in, before its first item is handed out (the
            scheduler reads the stored outputs of the executed runs in it).
    """

    def __init__(
        self,
        pages: Iterable[list[WorkItem]],
        on_page: Callable[[list[WorkItem]], None] | None = None,
    ) -> None:
        self._pages: Iterator[list[WorkItem]] = iter(pages)
        self._items: deque[WorkItem] = deque()
        self.on_page = on_page

    def _fill(self) -> bool:
        """Take in pages until one holds an item; False when none is left."""
        items = self._items
        while not items:
            page = next(self._pages, None)
            if page is None:
                return False
            if page:
                if self.on_page is not None:
                    self.on_page(page)
                items.extend(page)
        return True

    def __bool__(self) -> bool:
        return bool(self._items) or self._fill()

    def peek(self) -> WorkItem:
        """The next item, left in the queue (raises IndexError when none is left)."""
        if not self._items and not self._fill():
            raise IndexError("no work left")
        return self._items[0]

    def popleft(self) -> WorkItem:
        """Take the next item (raises IndexError when none is left)."""
        if not self._items and not self._fill():
            raise IndexError("no work left")
        return self._items.popleft()

    def drain(self) -> Iterator[WorkItem]:
        """Every item not taken yet, taken now, pages read without telling `on_page` (what a cancel
        or a stopping rule leaves unstarted)."""
        while self._items:
            yield self._items.popleft()
        for page in self._pages:
            yield from page


class CasePages(Mapping[int, Case]):
    """A dataset's cases by position, read from the store a page at a time as runs need them.

    Args:
        store: The open store.
        dataset_id: The dataset.
        size: Cases per page.
        keep: Pages kept (the least recently used one is dropped first).
    """

    def __init__(
        self, store: Store, dataset_id: int, *, size: int = PAGE_CASES, keep: int = KEEP_PAGES
    ) -> None:
        self.store = store
        self.dataset_id = dataset_id
        self.size = size
        self.keep = keep
        self.n = store.datasets.get(dataset_id).n_cases
        self._pages: OrderedDict[int, dict[int, Case]] = OrderedDict()
        self._last: tuple[int, dict[int, Case]] = (-1, {})  # the page asked for last: most runs ask it again
        self.reads = 0
        """Pages read from the store so far (a page dropped and needed again is read again)."""

    def __getitem__(self, idx: int) -> Case:
        number = idx // self.size
        last, page = self._last
        if number != last:
            got = self._pages.get(number)
            if got is None:
                start = number * self.size
                got = self.store.datasets.cases_between(self.dataset_id, start, start + self.size)
                self._pages[number] = got
                self.reads += 1
                while len(self._pages) > self.keep:
                    self._pages.popitem(last=False)
            else:
                self._pages.move_to_end(number)
            page = got
            self._last = (number, page)
        return page[idx]

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.n))

    def __len__(self) -> int:
        return self.n
