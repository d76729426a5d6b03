"""Users, tokens, sign-in and its throttle, Connect GitHub, redaction."""
