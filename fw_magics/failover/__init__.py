"""Failover (FLIP-1): which tasks restart when one fails, and whether and when. Pure Python, no Spark."""

from .region_strategy import FailoverStrategy, RestartAllStrategy, RestartPipelinedRegionStrategy
from .restart_strategies import (
    ExponentialDelayRestart,
    FailureRateRestart,
    FixedDelayRestart,
    RestartBackoffTimeStrategy,
    checked_backoff,
    restart_strategy,
    restartable,
)
from .start_retries import StartRetries

__all__ = [
    "ExponentialDelayRestart", "FailoverStrategy", "FailureRateRestart", "FixedDelayRestart",
    "RestartAllStrategy", "RestartBackoffTimeStrategy", "RestartPipelinedRegionStrategy", "checked_backoff",
    "restart_strategy", "restartable", "StartRetries",
]
