/**
 * The client over TLS, as against a real cluster: the kubeconfig's CA verifies the server, its
 * token and client certificate authenticate, connections are kept alive between requests.
 * (Self-signed test certificates for 127.0.0.1, valid until 2126; not secrets.)
 */
import t, { type Test } from 'tap'
import https from 'node:https'
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { KubeConfig } from '@kubernetes/client-node'
import { KubeClient } from '../operator/controller/client.ts'

const SERVER_CERT = `-----BEGIN CERTIFICATE-----
MIIBjzCCATagAwIBAgIURmf4/cz2F2adMbdS+6oCRYPHOZAwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEyMTE2NTc0M1oYDzIxMjYxMDI4
MTY1NzQzWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAASTAJb9rf49r+r3OM2TZ5DdbrV/LAT5wCIkEZa33fe9XF9fW6tG+BTv
yiekRlTVfNtWlXVRbEFHrbHo0RG14Bjao2QwYjAdBgNVHQ4EFgQUNg8VWt81Cpvr
JGtMpf9TF3yDH8IwHwYDVR0jBBgwFoAUNg8VWt81CpvrJGtMpf9TF3yDH8IwDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0cAMEQC
IBdwHGr2xf0eDx0sXhgb9y5HRgXh3EO5qUtzuJxZIwrhAiBc5kuiRwkemH1gq7O7
gw8P8QNA61vYzrpjprnj9QaOsw==
-----END CERTIFICATE-----
`
const SERVER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwjJrOubUfd3kBI5q
jsF2jvNQKjGckVS/9QSnBs5JckyhRANCAASTAJb9rf49r+r3OM2TZ5DdbrV/LAT5
wCIkEZa33fe9XF9fW6tG+BTvyiekRlTVfNtWlXVRbEFHrbHo0RG14Bja
-----END PRIVATE KEY-----
`
const CLIENT_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUKgAwIBAgIUMHkYvInfhSIAZ0FhWZFprsSi6yowCgYIKoZIzj0EAwIw
GDEWMBQGA1UEAwwNb3BlcmF0b3ItdGVzdDAgFw0yNjExMjExNjU3NDNaGA8yMTI2
MTAyODE2NTc0M1owGDEWMBQGA1UEAwwNb3BlcmF0b3ItdGVzdDBZMBMGByqGSM49
AgEGCCqGSM49AwEHA0IABNeYBbGntZcjqp4A2lHDhf3LlMyxSvHBY+svvoLt47SJ
lzTv3BqXQERFtwiTCMj7JnJK3MUl1LSMyKeZYUV2h7mjaDBmMB0GA1UdDgQWBBRR
7kXKQD40hIZJQbEA3cLSGvty2TAfBgNVHSMEGDAWgBRR7kXKQD40hIZJQbEA3cLS
Gvty2TAPBgNVHRMBAf8EBTADAQH/MBMGA1UdJQQMMAoGCCsGAQUFBwMCMAoGCCqG
SM49BAMCA0cAMEQCIGqRh1BeOjCYbtzdMviEsePIcAbRaRxXhlq6OvgGC69QAiAO
W1gP6t+T/olZiAgfggALBdVFjvZ7gu7P+botQ3IQfg==
-----END CERTIFICATE-----
`
const CLIENT_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgN/CJOivIy6Yu90UC
0IrdV7RKKzU0BRW3RzeO8HUaIc2hRANCAATXmAWxp7WXI6qeANpRw4X9y5TMsUrx
wWPrL76C7eO0iZc079wal0BERbcIkwjI+yZyStzFJdS0jMinmWFFdoe5
-----END PRIVATE KEY-----
`

/** A second client identity, for rotation. */
const ROTATED_CERT = `-----BEGIN CERTIFICATE-----
MIIBojCCAUigAwIBAgIUV8Frf3q86f6jNw8ypCWBeRymXnAwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQb3BlcmF0b3Itcm90YXRlZDAgFw0yNjExMjUwMDMyMThaGA8y
MTI2MTEwMTAwMzIxOFowGzEZMBcGA1UEAwwQb3BlcmF0b3Itcm90YXRlZDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABFNt4Ka2PxyKhWRRu1D7f8162DoKQt3jnoDv
xS7ol0N3wXiEWoPJdtJ44FnjXyTJ1YeZBL46dKgmZ8vWIBFXH1WjaDBmMB0GA1Ud
DgQWBBRdSyaJ107cEELTxHbjIrM33h+dlTAfBgNVHSMEGDAWgBRdSyaJ107cEELT
xHbjIrM33h+dlTAPBgNVHRMBAf8EBTADAQH/MBMGA1UdJQQMMAoGCCsGAQUFBwMC
MAoGCCqGSM49BAMCA0gAMEUCIQCv5xQiyiW7a9BvkLXoPsqu34vLuxsDESzvh/XL
GBsUcQIgQQiixWjovGf7c+kLSGWShoSeoIY6huiBLimyNk9KoDY=
-----END CERTIFICATE-----
`
const ROTATED_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgfFisrGcyvxV14cNY
ejIOelfVrsIgwTcRiVo76X6CjwWhRANCAARTbeCmtj8cioVkUbtQ+3/Netg6CkLd
456A78Uu6JdDd8F4hFqDyXbSeOBZ418kydWHmQS+OnSoJmfL1iARVx9V
-----END PRIVATE KEY-----
`

const b64 = (s: string): string => Buffer.from(s).toString('base64')

interface Seen {
  authorization: string | undefined
  peer: string | undefined
  url: string
}

/** A tiny HTTPS API server that answers one ConfigMap and records who asked. */
async function server(t: Test, opts: { requireClientCert: boolean }): Promise<{ url: string; seen: Seen[]; connections: () => number }> {
  const seen: Seen[] = []
  let connections = 0
  const srv = https.createServer({ cert: SERVER_CERT, key: SERVER_KEY, ca: [CLIENT_CERT, ROTATED_CERT], requestCert: opts.requireClientCert, rejectUnauthorized: opts.requireClientCert }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate()
    seen.push({ authorization: req.headers.authorization, peer: peer && 'subject' in peer && peer.subject ? String(peer.subject.CN) : undefined, url: req.url ?? '' })
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'tls', namespace: 'default', creationTimestamp: '2026-11-21T10:00:00Z' }, data: { a: '1' } })
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) })
    res.end(body)
  })
  srv.on('secureConnection', () => connections++)
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise<void>((r) => {
    srv.close(() => r())
    srv.closeAllConnections()
  }))
  return { url: `https://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen, connections: () => connections }
}

function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig()
  kc.loadFromString(JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
    'current-context': 'x',
  }))
  return kc
}

const REF = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'tls' }

t.test('the CA in the kubeconfig verifies the server; the token is sent; connections are reused', async (t) => {
  const s = await server(t, { requireClientCert: false })
  const client = new KubeClient(kubeconfig({ server: s.url, 'certificate-authority-data': b64(SERVER_CERT) }, { token: 'tok-123' }), { userAgent: 'tls-test' })
  t.teardown(() => client.close())
  for (let i = 0; i < 3; i++) {
    const cm = await client.get(REF)
    t.equal(cm.metadata.creationTimestamp, '2026-11-21T10:00:00Z')
  }
  t.same(s.seen.map((x) => x.authorization), ['Bearer tok-123', 'Bearer tok-123', 'Bearer tok-123'])
  t.equal(s.connections(), 1, 'one TLS connection for three requests')
})

t.test('a server the CA does not vouch for is refused, unless verification is skipped', async (t) => {
  const s = await server(t, { requireClientCert: false })
  const strict = new KubeClient(kubeconfig({ server: s.url, 'certificate-authority-data': b64(CLIENT_CERT) }, { token: 'x' }), { userAgent: 'tls-test' })
  t.teardown(() => strict.close())
  await t.rejects(strict.get(REF), /self-signed|certificate/)
  t.equal(s.seen.length, 0, 'no request reached the server')
  const lax = new KubeClient(kubeconfig({ server: s.url, 'insecure-skip-tls-verify': true }, { token: 'x' }), { userAgent: 'tls-test' })
  t.teardown(() => lax.close())
  t.equal((await lax.get(REF)).metadata.name, 'tls')
})

t.test('a client certificate from the kubeconfig authenticates', async (t) => {
  const s = await server(t, { requireClientCert: true })
  const client = new KubeClient(kubeconfig({ server: s.url, 'certificate-authority-data': b64(SERVER_CERT) }, { 'client-certificate-data': b64(CLIENT_CERT), 'client-key-data': b64(CLIENT_KEY) }), { userAgent: 'tls-test' })
  t.teardown(() => client.close())
  t.equal((await client.get(REF)).metadata.name, 'tls')
  t.equal(s.seen[0]?.peer, 'operator-test')
  t.equal(s.seen[0]?.authorization, undefined)
  const anonymous = new KubeClient(kubeconfig({ server: s.url, 'certificate-authority-data': b64(SERVER_CERT) }, {}), { userAgent: 'tls-test' })
  t.teardown(() => anonymous.close())
  await t.rejects(anonymous.get(REF), 'without the certificate the handshake fails')
})

t.test('basic auth from the kubeconfig', async (t) => {
  const s = await server(t, { requireClientCert: false })
  const client = new KubeClient(kubeconfig({ server: s.url + '/', 'certificate-authority-data': b64(SERVER_CERT) }, { username: 'admin', password: 'pw' }), { userAgent: 'tls-test' })
  t.teardown(() => client.close())
  await client.get(REF)
  t.equal(s.seen[0]?.authorization, `Basic ${b64('admin:pw')}`)
  t.equal(s.seen[0]?.url, '/api/v1/namespaces/default/configmaps/tls')
})

t.test('in-cluster configuration: service account token and CA from their files', async (t) => {
  const s = await server(t, { requireClientCert: false })
  const root = mkdtempSync(join(tmpdir(), 'incluster-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount')
  mkdirSync(sa, { recursive: true })
  writeFileSync(join(sa, 'token'), 'sa-token')
  writeFileSync(join(sa, 'ca.crt'), SERVER_CERT)
  writeFileSync(join(sa, 'namespace'), 'operators')
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT }
  t.teardown(() => {
    for (const [k, v] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
  })
  process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1'
  process.env.KUBERNETES_SERVICE_PORT = new URL(s.url).port
  const kc = new KubeConfig()
  kc.loadFromCluster(root)
  const client = new KubeClient(kc, { userAgent: 'tls-test' })
  t.teardown(() => client.close())
  t.equal(client.server, s.url)
  t.equal((await client.get(REF)).metadata.name, 'tls')
  t.equal(s.seen[0]?.authorization, 'Bearer sa-token')
})

t.test('client certificate files rotated on disk are used at once, on new connections (as client-go reloads them)', async (t) => {
  const s = await server(t, { requireClientCert: true })
  const dir = mkdtempSync(join(tmpdir(), 'mc-certs-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'tls.crt'), CLIENT_CERT)
  writeFileSync(join(dir, 'tls.key'), CLIENT_KEY)
  const client = new KubeClient(kubeconfig({ server: s.url, 'certificate-authority-data': b64(SERVER_CERT) }, { 'client-certificate': join(dir, 'tls.crt'), 'client-key': join(dir, 'tls.key') }), { userAgent: 'tls-test' })
  t.teardown(() => client.close())
  await client.get(REF)
  await client.get(REF)
  t.same(s.seen.map((x) => x.peer), ['operator-test', 'operator-test'])
  t.equal(s.connections(), 1, 'kept alive while the files stay the same')
  writeFileSync(join(dir, 'tls.crt'), ROTATED_CERT)
  writeFileSync(join(dir, 'tls.key'), ROTATED_KEY)
  await client.get(REF)
  t.equal(s.seen.at(-1)?.peer, 'operator-rotated', 'the new certificate authenticates the next request')
  t.equal(s.connections(), 2, 'on a new connection')
})
