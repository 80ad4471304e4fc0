/**
 * The serving certificate of the HTTPS metrics endpoint, as controller-runtime's metrics server
 * finds it: `tls.crt` and `tls.key` in `--metrics-cert-dir` (a mounted Secret, e.g. from
 * cert-manager; re-read when they change, as its certwatcher does), or else a self-signed
 * certificate made at start for `localhost` (Prometheus then scrapes with
 * `insecureSkipVerify`, as kubebuilder's scaffold does until a certificate is configured).
 */
import { readFileSync, statSync } from 'node:fs'
import { hostname } from 'node:os'
import { join } from 'node:path'

/** A PEM certificate chain and its key. */
export interface KeyPair {
  cert: string
  key: string
}

/** A certificate made here, valid for a year from now (the process restarts well before). */
export async function selfSignedCertificate(): Promise<KeyPair> {
  const host = hostname()
  // Loaded only when needed: it brings an X.509 toolkit that a plain-HTTP run never uses.
  const { generate } = await import('selfsigned')
  const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, ...(host && host !== 'localhost' ? [{ type: 2 as const, value: host }] : []), { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
    ],
  })
  return { cert: pems.cert, key: pems.private }
}

/** The files of a certificate directory, controller-runtime's default names. */
export function certFiles(dir: string): { cert: string; key: string } {
  return { cert: join(dir, 'tls.crt'), key: join(dir, 'tls.key') }
}

/**
 * Reads `tls.crt` and `tls.key` of `dir`.
 * @throws Error naming the file that cannot be read
 */
export function readCertDir(dir: string): KeyPair {
  const files = certFiles(dir)
  const read = (file: string): string => {
    try {
      return readFileSync(file, 'utf8')
    } catch (err) {
      throw new Error(`--metrics-cert-dir: cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`)
    }
  }
  return { cert: read(files.cert), key: read(files.key) }
}

/** A fingerprint of the two files' modification times and sizes, to notice a rotation. */
export function certDirVersion(dir: string): string {
  const files = certFiles(dir)
  try {
    return [files.cert, files.key].map((f) => {
      const s = statSync(f)
      return `${s.mtimeMs}:${s.size}:${s.ino}`
    }).join('|')
  } catch {
    return ''
  }
}
