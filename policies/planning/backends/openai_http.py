"""OpenAI-compatible chat-completions backend over HTTP (Ollama, vLLM, LM Studio, llama.cpp server, hosted
APIs). It cannot constrain decoding, so the planner validates its answers and re-asks.

HTTP by the standard library's urllib: one JSON POST and one GET need no client library, and this backend
then works without the ML stack installed.
"""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

from policies.planning.backends import Completion, ModelError
from policies.planning.decisions import Message
from policies.planning.llm_config import LLMConfig

RETRY_BACKOFF_S = 0.5
"""Pause before the first retry; doubled for each further one."""


class OpenAIChatModel:
    """Chat completions from `{base_url}/chat/completions`; checked at start-up with `{base_url}/models`."""

    constrains = False

    def __init__(self, config: LLMConfig) -> None:
        if not config.base_url.startswith(("http://", "https://")):
            raise ModelError(f"base_url {config.base_url!r} must start with http:// or https://")
        self.config = config
        self.url = config.base_url.rstrip("/")
        self.description = f"openai:{config.model}@{self.url}"
        self._key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self._check()

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request with bounded retries on network errors, timeouts and 5xx; JSON object back."""
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        data = None if body is None else json.dumps(body).encode()
        last = ""
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                time.sleep(RETRY_BACKOFF_S * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url + path, data=data, headers=headers, method=method)
            try:
                with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
                    raw = response.read()
            except urllib.error.HTTPError as err:
                detail = err.read()[:300].decode(errors="replace")
                last = f"HTTP {err.code} from {self.url + path}: {detail}"
                if err.code < 500 and err.code != 429:
                    hint = (
                        " (check the key in $" + self.config.api_key_env + ")"
                        if err.code in (401, 403)
                        else ""
                    )
                    raise ModelError(last + hint) from err
                continue
            except TimeoutError:
                last = f"no answer from {self.url + path} within {self.config.timeout_s} s"
                continue
            except http.client.HTTPException as err:
                last = f"{self.url + path} broke the HTTP protocol: {type(err).__name__}: {err}"
                continue
            except OSError as err:  # URLError, refused or reset connections
                reason = getattr(err, "reason", err)
                last = f"cannot reach {self.url + path}: {reason}"
                continue
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise ModelError(
                    f"{self.url + path} answered with something that is not JSON: {raw[:200]!r}"
                ) from None
            if not isinstance(parsed, dict):
                raise ModelError(f"{self.url + path} answered with JSON that is not an object: {raw[:200]!r}")
            return parsed
        raise ModelError(f"{last} (after {self.config.max_retries + 1} tries); is the server running?")

    def _check(self) -> None:
        """Fail at start-up, not mid-task, when the endpoint is unreachable or does not serve the model."""
        listing = self._request("GET", "/models")
        ids = [str(m.get("id")) for m in listing.get("data", []) if isinstance(m, dict)]
        if ids and self.config.model not in ids:
            raise ModelError(
                f"{self.url} does not serve model {self.config.model!r}; it serves: {', '.join(ids)}"
            )

    def complete(
        self,
        messages: Sequence[Message],
        choices: Sequence[str] | None = None,
        max_new_tokens: int | None = None,
    ) -> Completion:
        body = {
            "model": self.config.model,
            "messages": list(messages),
            "temperature": self.config.temperature if self.config.do_sample else 0.0,
            "max_tokens": max_new_tokens or self.config.max_new_tokens,
        }
        answer = self._request("POST", "/chat/completions", body)
        try:
            text = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(
                f"{self.url}/chat/completions answered without choices[0].message.content: "
                f"{json.dumps(answer)[:200]}"
            ) from None
        if not isinstance(text, str):
            raise ModelError(f"{self.url}/chat/completions answered with non-text content {text!r}")
        return Completion(text=text.strip(), prompt_text=json.dumps(list(messages), ensure_ascii=False))

    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        """Nothing to warm: the endpoint keeps (or not) its own cache."""
