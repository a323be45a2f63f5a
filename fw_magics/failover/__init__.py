"""Failover (FLIP-1): which tasks restart when one fails, and whether and when. Pure Python, no Spark."""

from .region_strategy import RestartAllStrategy, RestartPipelinedRegionStrategy
from .restart_strategies import ExponentialDelayRestart, FailureRateRestart, FixedDelayRestart

__all__ = [
    "ExponentialDelayRestart", "FailureRateRestart", "FixedDelayRestart",
    "RestartAllStrategy", "RestartPipelinedRegionStrategy",
]
