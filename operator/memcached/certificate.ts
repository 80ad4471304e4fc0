/**
 * What the operator keeps of a TLS Secret (kubernetes.io/tls: tls.crt, tls.key): the fingerprint
 * and serial of its certificate, when it expires, and whether memcached could load it — never the
 * key. memcached's `refresh_certs` loads the chain, then the key, then checks that they match, into
 * the context it serves from (tls.c load_server_certificates): a pair that fails half-way leaves
 * the new certificate with the old key and every handshake fails. So a pair is checked here, as
 * memcached will check it, before any pod is asked to load it.
 */
import { createPrivateKey, X509Certificate } from 'node:crypto'
import { fingerprintOf } from './connection.ts'

/** A TLS Secret's certificate as the operator caches it. */
export interface CertificateSummary {
  /** SHA-256 fingerprint of the leaf (the first certificate of tls.crt), as {@link fingerprintOf} gives it. */
  fingerprint?: string
  /** Its serial number, in upper-case hex. */
  serial?: string
  /** Its notAfter, RFC 3339. */
  notAfter?: string
  /** Why memcached would refuse the pair ({@link describeProblem} says it in words); absent when it would load it. */
  problem?: CertificateProblem
}

/** Why memcached would refuse a Secret's pair: kept as a code, so that nothing cached reads like the Secret's content. */
export type CertificateProblem = 'crt-unparsable' | 'key-missing' | 'key-unparsable' | 'key-mismatch'

/** A {@link CertificateProblem} in words. */
export function describeProblem(problem: CertificateProblem): string {
  return {
    'crt-unparsable': 'tls.crt is not a PEM certificate',
    'key-missing': 'the Secret has no tls.key',
    'key-unparsable': 'tls.key is not a PEM private key',
    'key-mismatch': 'tls.key is not the key of the certificate in tls.crt',
  }[problem]
}

/** The certificate and key of a Secret's `data` (base64, as the API returns it) or `stringData`. */
export function certificateSummary(secret: { data?: Record<string, string> | null; stringData?: Record<string, string> | null }): CertificateSummary | undefined {
  const read = (key: string): Buffer | undefined => {
    const s = secret.stringData?.[key]
    if (typeof s === 'string') return Buffer.from(s, 'utf8')
    const d = secret.data?.[key]
    return typeof d === 'string' ? Buffer.from(d, 'base64') : undefined
  }
  const crt = read('tls.crt')
  if (crt === undefined) return undefined
  let cert: X509Certificate
  try {
    cert = new X509Certificate(crt)
  } catch {
    return { problem: 'crt-unparsable' }
  }
  const summary: CertificateSummary = { fingerprint: fingerprintOf(cert.raw), serial: cert.serialNumber.toUpperCase(), notAfter: new Date(cert.validTo).toISOString().replace(/\.\d{3}Z$/, 'Z') }
  const keyBytes = read('tls.key')
  if (keyBytes === undefined) return { ...summary, problem: 'key-missing' }
  let key: ReturnType<typeof createPrivateKey>
  try {
    key = createPrivateKey(keyBytes)
  } catch {
    return { ...summary, problem: 'key-unparsable' }
  }
  if (!cert.checkPrivateKey(key)) return { ...summary, problem: 'key-mismatch' }
  return summary
}
