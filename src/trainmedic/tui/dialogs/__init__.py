"""Modal dialogs: help, the launch command, the runbook export."""
