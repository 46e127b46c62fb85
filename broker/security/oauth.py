"""OAUTHBEARER: signed JWTs checked as Kafka's ``OAuthBearerValidatorCallbackHandler`` does.

``ValidatorAccessTokenValidator`` with a ``JwksFileVerificationKeyResolver``:

* the signature, with the JWKS key the token's ``kid`` names (no ``alg: none``;
  the algorithm must be the key's kind: RS*/PS* for RSA, ES* for EC keys);
* ``exp`` and ``iat`` required, ``exp`` and ``nbf`` checked with
  ``sasl.oauthbearer.clock.skew.seconds`` of leeway;
* ``iss`` equal to ``sasl.oauthbearer.expected.issuer`` when set, ``aud``
  naming one of ``sasl.oauthbearer.expected.audience`` when set;
* the principal from ``sasl.oauthbearer.sub.claim.name`` (default ``sub``),
  a non-blank string; the scope claim (``sasl.oauthbearer.scope.claim.name``)
  a string or a list without duplicates when present.

The JWKS comes from ``sasl.oauthbearer.jwks.endpoint.url``, a ``file:`` URL
(Kafka refreshes HTTP endpoints; a file is read again when it changes).
Validation is PyJWT with ``cryptography``.
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import jwt

from broker.errors import InvalidConfigError

_ALGORITHMS = {
    "RSA": ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"],
    "EC": ["ES256", "ES384", "ES512"],
    "OKP": ["EdDSA"],
}


class JwtValidator:
    def __init__(
        self,
        jwks_url: str,
        *,
        issuer: str | None,
        audience: tuple[str, ...],
        clock_skew_s: int,
        scope_claim: str,
        sub_claim: str,
        key: str = "sasl.oauthbearer.jwks.endpoint.url",
    ) -> None:
        parsed = urllib.parse.urlparse(jwks_url)
        if parsed.scheme != "file":
            raise InvalidConfigError(
                f"Invalid value {jwks_url} for configuration {key}: this broker reads a JWKS"
                " from a file: URL only"
            )
        self.path = Path(urllib.parse.unquote(parsed.path))
        self.key = key
        self.issuer = issuer
        self.audience = audience
        self.clock_skew_s = clock_skew_s
        self.scope_claim = scope_claim
        self.sub_claim = sub_claim
        self._stamp: tuple[int, int] | None = None
        self._keys: dict[str | None, Any] = {}
        self._load()

    def _load(self) -> None:
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp == self._stamp:
                return
            keyset = jwt.PyJWKSet.from_json(self.path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError, jwt.PyJWTError) as exc:
            if self._stamp is None:
                raise InvalidConfigError(
                    f"{self.key}: cannot read a JWKS from {self.path}: {exc}"
                ) from None
            return  # keep the keys read last time
        self._keys = {k.key_id: k for k in keyset.keys}
        self._stamp = stamp

    def validate(self, token: str) -> tuple[str, int]:
        self._load()
        try:
            header = jwt.get_unverified_header(token)
            jwk = self._keys.get(header.get("kid"))
            if jwk is None:
                if len(self._keys) != 1 or header.get("kid") is not None:
                    raise ValueError(f"no JWKS key with kid {header.get('kid')!r}")
                jwk = next(iter(self._keys.values()))
            algorithms = _ALGORITHMS.get(jwk.key_type, [])
            claims = jwt.decode(
                token,
                jwk.key,
                algorithms=algorithms,
                audience=list(self.audience) or None,
                issuer=self.issuer,
                leeway=self.clock_skew_s,
                options={
                    "require": ["exp", "iat"],
                    "verify_aud": bool(self.audience),
                    "verify_iss": self.issuer is not None,
                },
            )
        except jwt.PyJWTError as exc:
            raise ValueError(f"Could not validate the access token: {exc}") from None
        sub = claims.get(self.sub_claim)
        if not isinstance(sub, str) or not sub.strip():
            raise ValueError(f"{self.sub_claim} value must be a non-blank string")
        scope = claims.get(self.scope_claim)
        scopes = [scope] if isinstance(scope, str) else scope if isinstance(scope, list) else []
        if len(set(map(str, scopes))) != len(scopes):
            raise ValueError(f"{self.scope_claim} value must not contain duplicates")
        exp = claims["exp"]
        if not isinstance(exp, (int, float)) or exp < 0:
            raise ValueError("exp value must be non-negative")
        return sub.strip(), int(exp * 1000)
