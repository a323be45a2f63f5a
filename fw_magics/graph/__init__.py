"""The job graph model (FLIP-331 operator attributes, chains, pipelined regions). No Spark."""

from .model import Edge, JobGraph, Operator, OperatorAttributes

__all__ = ["Edge", "JobGraph", "Operator", "OperatorAttributes"]
