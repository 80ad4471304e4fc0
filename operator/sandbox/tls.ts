/**
 * The sandbox's TLS identity: a self-signed certificate for 127.0.0.1, ::1 and localhost, fixed
 * in the source as Go's `net/http/httptest` fixes its `LocalhostCert`. It exists because kubectl
 * (client-go's clientcmd) sends credentials — bearer tokens, impersonation headers — only over
 * TLS; the kubeconfig names this certificate as its CA. The key protects nothing but loopback
 * test traffic.
 */

/** PEM certificate (also the CA the kubeconfig trusts). */
export const sandboxCert = `-----BEGIN CERTIFICATE-----
MIIB6jCCAZCgAwIBAgIBATAKBggqhkjOPQQDAjA5MSMwIQYDVQQKDBptZW1jYWNo
ZWQtb3BlcmF0b3Igc2FuZGJveDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTAwMDEw
MTAwMDAwMFoYDzIxMDAwMTAxMDAwMDAwWjA5MSMwIQYDVQQKDBptZW1jYWNoZWQt
b3BlcmF0b3Igc2FuZGJveDESMBAGA1UEAwwJMTI3LjAuMC4xMFkwEwYHKoZIzj0C
AQYIKoZIzj0DAQcDQgAEMub/CHxuHVfIJuQ1KfvrZcZdbhRZFuJJb7i+P0l0k52a
XYDz3cYFEDDus4RKsGZb6jJ2Kn90915D7uyhB+/tpaOBhjCBgzAsBgNVHREEJTAj
hwR/AAABhxAAAAAAAAAAAAAAAAAAAAABgglsb2NhbGhvc3QwDwYDVR0TAQH/BAUw
AwEB/zAOBgNVHQ8BAf8EBAMCAoQwEwYDVR0lBAwwCgYIKwYBBQUHAwEwHQYDVR0O
BBYEFCsFPhGjF9f86zULb60yuLnOYnaKMAoGCCqGSM49BAMCA0gAMEUCIQDvg1vs
6ZqP3EIy42kZJMf7096bK4MliyPGag8Fv7hYugIgV9a+hLXarhIbQiNyceF+Qd7A
7UtPucyWN/ubvRY3/IU=
-----END CERTIFICATE-----
`

/** PEM private key of {@link sandboxCert}. */
export const sandboxKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgRdDyXLfx/Jn1kgSo
ieccBZJfVapUNyzqYOneOAN+7FWhRANCAAQy5v8IfG4dV8gm5DUp++tlxl1uFFkW
4klvuL4/SXSTnZpdgPPdxgUQMO6zhEqwZlvqMnYqf3T3XkPu7KEH7+2l
-----END PRIVATE KEY-----
`
