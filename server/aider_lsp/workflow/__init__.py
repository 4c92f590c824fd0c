"""The coding workflow: plan → Aider edit → tests → analysis, retried until done."""

from .orchestrator import CodingWorkflowOrchestrator

__all__ = ["CodingWorkflowOrchestrator"]
