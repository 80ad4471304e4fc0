/**
 * Certificates for the TLS tests, made with the openssl command: a CA, a server certificate it
 * signs (usable as a client certificate too, as the chart's cert-manager Certificate is), and a
 * client certificate of another CA that memcached must refuse.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { requireTool } from './memcached.ts'
import { tempDir } from './tmp.ts'

export interface Pki {
  ca: string
  crt: string
  key: string
  rogueCrt: string
  rogueKey: string
  /** Where the CA's files are (for {@link renewed}). */
  dir: string
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] })
}

function ca(dir: string, name: string): void {
  openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-days', '2', '-keyout', `${name}.key`, '-out', `${name}.crt`)
}

function signed(dir: string, caName: string, name: string, days = 2): void {
  writeFileSync(join(dir, `${name}.ext`), 'subjectAltName=DNS:localhost,DNS:cache.team.svc\nextendedKeyUsage=serverAuth,clientAuth\n')
  openssl(dir, 'req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`)
  openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.crt`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-days', String(days), '-extfile', `${name}.ext`, '-out', `${name}.crt`)
}

export function makePki(): Pki {
  requireTool('openssl', ['version'])
  const dir = tempDir('mc-pki-')
  ca(dir, 'ca')
  ca(dir, 'rogue-ca')
  signed(dir, 'ca', 'server')
  signed(dir, 'rogue-ca', 'rogue')
  const read = (f: string) => readFileSync(join(dir, f), 'utf8')
  return { ca: read('ca.crt'), crt: read('server.crt'), key: read('server.key'), rogueCrt: read('rogue.crt'), rogueKey: read('rogue.key'), dir }
}

let renewals = 0
/** A renewed server certificate of the same CA: a new key, a new serial (what cert-manager writes on renewal). */
export function renewed(pki: Pki): { crt: string; key: string } {
  const name = `renewed-${++renewals}`
  signed(pki.dir, 'ca', name)
  return { crt: readFileSync(join(pki.dir, `${name}.crt`), 'utf8'), key: readFileSync(join(pki.dir, `${name}.key`), 'utf8') }
}

/** A certificate of the same CA whose validity ended a day ago (openssl's negative -days): what a client that kept its old certificate holds after its expiry. */
export function expired(pki: Pki): { crt: string; key: string } {
  const name = `expired-${++renewals}`
  signed(pki.dir, 'ca', name, -1)
  return { crt: readFileSync(join(pki.dir, `${name}.crt`), 'utf8'), key: readFileSync(join(pki.dir, `${name}.key`), 'utf8') }
}
