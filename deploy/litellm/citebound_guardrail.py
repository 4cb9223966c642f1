"""LiteLLM loads a custom guardrail from a file beside its config: this one is citebound's."""
from citebound.integrations.litellm_guardrail import CiteboundGuardrail  # noqa: F401
