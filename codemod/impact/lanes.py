"""Lane assignment for timelines: each interval goes to the lowest lane free at its start (O(n log n))."""

from __future__ import annotations

import heapq


def assign_lanes(intervals: list[tuple[float, float]]) -> list[int]:
    """intervals[i] = (start, end) -> lane of each interval; stable for equal starts (input order)."""
    order = sorted(range(len(intervals)), key=lambda i: (intervals[i][0], i))
    busy: list[tuple[float, int]] = []  # (end, lane)
    free: list[int] = []
    lanes = [0] * len(intervals)
    count = 0
    for i in order:
        start, end = intervals[i]
        while busy and busy[0][0] <= start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            lane = heapq.heappop(free)
        else:
            lane, count = count, count + 1
        lanes[i] = lane
        heapq.heappush(busy, (end, lane))
    return lanes
