"""The model the settings name, with its provider's key (``AI_MODEL``, ``AI_API_KEY``).

Pydantic AI names a model ``"<provider>:<model>"`` (``"openai:gpt-5.2"``) and its provider
reads its key from the environment (``OPENAI_API_KEY``). A project may instead give both in
``DJANGO_WORKFLOWS``: ``AI_MODEL`` is the model of agents made without one, and
``AI_API_KEY`` the key of ``AI_MODEL``'s provider. Nothing here calls the provider: the
model is built when a request needs it.
"""

from __future__ import annotations

from pydantic_ai.models import Model, infer_model, parse_model_id
from pydantic_ai.providers import Provider, infer_provider_class

from ..conf import workflow_settings


def configured_model() -> str | None:
    """The settings' ``AI_MODEL``: a Pydantic AI model name, or None."""
    name = workflow_settings.AI_MODEL
    return str(name) if name else None


def model_with_key(name: str) -> Model | None:
    """The model ``name`` gives with the settings' ``AI_API_KEY``, when that key is its
    provider's (the provider of ``AI_MODEL``); None leaves it to Pydantic AI, whose
    provider reads its key from the environment."""
    key, configured = workflow_settings.AI_API_KEY, configured_model()
    provider = parse_model_id(name)[0]
    if not key or configured is None or provider is None \
            or provider != parse_model_id(configured)[0]:
        return None

    def provider_with_key(provider_name: str) -> Provider[object]:
        provider_class = infer_provider_class(provider_name)
        try:
            return provider_class(api_key=key)  # type: ignore[call-arg]
        except TypeError:
            raise TypeError(f'AI_API_KEY: the provider "{provider_name}" of AI_MODEL takes no '
                            "API key; leave AI_API_KEY out and configure it as Pydantic AI "
                            "documents") from None

    return infer_model(name, provider_factory=provider_with_key)
