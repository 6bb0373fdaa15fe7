"""Planner: checkpoint interval, completion time, failure-weighted GPU-time loss, quotas."""
