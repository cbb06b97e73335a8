//! The RADIUS client of the authenticator (RFC 2865, RFC 3579, RFC 2548).
