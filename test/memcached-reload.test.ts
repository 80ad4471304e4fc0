/**
 * Changes that keep the cache, against the real memcached started with the rendered args: a
 * renewed certificate loaded by `refresh_certs` (what the operator sends, through its own
 * connection code), a changed auth file reloaded by the rendered reloader sidecar's SIGHUP, and
 * `cache_memlimit` changing the memory limit, each with the items written before still served.
 * The Secret volumes are laid out as the kubelet writes them (test/support/atomic-writer.ts).
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { X509Certificate } from 'node:crypto'
import t from 'tap'
import { MemcachedConnection, MemcachedError } from '../operator/memcached/connection.ts'
import { certificateSummary } from '../operator/memcached/certificate.ts'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { writeAtomic } from './support/atomic-writer.ts'
import { plain, setGet, stats, tls, tlsUsable } from './support/memcached-client.ts'
import { podCommand, podOf, running, startArgs, startPod } from './support/memcached.ts'
import { expired, makePki, renewed } from './support/pki.ts'
import { eventually } from './support/operator.ts'

const chart = loadChart()
const pki = makePki()
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, ...spec } }).objects
const serial = (pem: string) => new X509Certificate(pem).serialNumber.toUpperCase()

/** How far an open got before it failed (MemcachedError's stage), or "opened". */
async function failedAt(open: Promise<MemcachedConnection>): Promise<string> {
  try {
    ;(await open).close()
    return 'opened'
  } catch (err) {
    return err instanceof MemcachedError ? err.stage : String(err)
  }
}

/** The serial of the certificate memcached serves now (a new connection). */
async function served(port: number): Promise<string> {
  const conn = await tls(port)
  try {
    return (conn.socket as import('node:tls').TLSSocket).getPeerX509Certificate()!.serialNumber.toUpperCase()
  } finally {
    conn.close()
  }
}

t.test('refresh_certs after the kubelet swapped in a renewed Secret: the new certificate is served, the items written before are kept', async (t) => {
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  const before = await tls(mc.port)
  t.equal(await setGet(before, 'warm', 'kept'), 'kept')
  before.close()
  t.equal(await served(mc.port), serial(pki.crt))

  const next = renewed(pki)
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': next.crt, 'tls.key': next.key })
  t.equal(await served(mc.port), serial(pki.crt), 'new files alone change nothing: memcached read them at start')

  const conn = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
  t.equal(await conn.command('refresh_certs'), 'OK')
  conn.close()
  t.equal(await served(mc.port), serial(next.crt), 'the renewed certificate is served')
  const again = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
  t.equal(again.served(), certificateSummary({ stringData: { 'tls.crt': next.crt, 'tls.key': next.key } })?.fingerprint, 'the fingerprint the operator compares is the Secret\'s')
  t.equal(await again.command('get warm'), 'VALUE warm 0 4', 'the item written before the reload')
  again.close()
})

t.test('clientAuth require with the auth file: the operator\'s connection presents the Secret\'s certificate and the credentials, then refresh_certs', async (t) => {
  const secrets = { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca }, users: { passwords: 'alice:s3cret\n' } }
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' }, auth: { enabled: true, secretName: 'users' } }), { secrets }))
  t.teardown(() => mc.stop())
  const next = renewed(pki)
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': next.crt, 'tls.key': next.key, 'ca.crt': pki.ca })
  t.equal(await failedAt(MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {}, credentials: { user: 'alice', password: 's3cret' } })), 'connect', 'without a client certificate, refused')
  const conn = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: { cert: next.crt, key: next.key }, credentials: { user: 'alice', password: 's3cret' } })
  t.equal(await conn.command('refresh_certs'), 'OK')
  conn.close()
  const after = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: { cert: next.crt, key: next.key }, credentials: { user: 'alice', password: 's3cret' } })
  t.equal(after.served(), certificateSummary({ stringData: { 'tls.crt': next.crt, 'tls.key': next.key } })?.fingerprint)
  after.close()
  t.equal(await failedAt(MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: { cert: next.crt, key: next.key }, credentials: { user: 'alice', password: 'wrong' } })), 'auth', 'a wrong password is refused')
})

/**
 * The exporter sidecar as memcached_exporter v0.16.0 connects: a new client at every scrape
 * (pkg/exporter/exporter.go Collect: memcache.New), whose TLS config prometheus/common v0.67.5
 * made at start (config/http_config.go NewTLSConfigWithContext): the CA file read then, the
 * client certificate and key read from their files at every handshake (GetClientCertificate).
 * The exporter itself is not run (no registry this project reaches ships it); its flags are the
 * rendered ones, its files the pod's.
 */
function exporterOf(objects: ReturnType<typeof render>, files: { path(p: string): string }) {
  const pod = podOf(objects)
  const exporter = pod.containers.find((c) => c.name === 'metrics')
  if (!exporter) throw new Error('no exporter container rendered')
  const flag = (name: string) => exporter.args?.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const certFile = flag('memcached.tls.cert-file')
  const keyFile = flag('memcached.tls.key-file')
  const caFile = flag('memcached.tls.ca-file')
  if (!certFile || !keyFile || !caFile) throw new Error(`the exporter's TLS flags: ${JSON.stringify(exporter.args)}`)
  const ca = readFileSync(files.path(caFile), 'utf8')
  const servername = flag('memcached.tls.server-name')
  return {
    container: exporter,
    /** One scrape of memcached on `port` (the pod's loopback port is the test's). */
    scrape: (port: number) => tlsUsable(port, { ca, ...(servername ? { servername } : {}), rejectUnauthorized: true, cert: readFileSync(files.path(certFile), 'utf8'), key: readFileSync(files.path(keyFile), 'utf8') }),
  }
}

t.test('clientAuth require, the exporter across a renewal: its next scrape presents the renewed certificate from the files the kubelet swapped, so its old one expiring stops nothing', async (t) => {
  const objects = render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' }, metrics: { enabled: true } })
  const mc = running(await startPod(objects, { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca } } }))
  t.teardown(() => mc.stop())
  const exporter = exporterOf(objects, mc.files)
  const memcachedMount = podOf(objects).containers.find((c) => c.name === 'memcached')?.volumeMounts?.find((m) => m.name === 'tls')
  t.same(exporter.container.volumeMounts, [memcachedMount], 'the exporter mounts the Secret\'s volume whole, as memcached does (a subPath mount is never updated by the kubelet)')
  t.match(await exporter.scrape(mc.port), /^VERSION /, 'a scrape with the certificate it started with')

  const old = expired(pki)
  t.match(await tlsUsable(mc.port, { ca: pki.ca, cert: old.crt, key: old.key }), /^refused/, 'memcached refuses a client certificate past its expiry: what an exporter that kept its first certificate would meet')

  const next = renewed(pki)
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': next.crt, 'tls.key': next.key, 'ca.crt': pki.ca })
  const op = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: { cert: next.crt, key: next.key } })
  t.equal(await op.command('refresh_certs'), 'OK', 'the operator\'s refresh, with the Secret\'s certificate')
  op.close()
  t.match(await exporter.scrape(mc.port), /^VERSION /, 'the next scrape: the renewed certificate read from the swapped files, the renewed server certificate verified against the CA read at start')
})

t.test('clientAuth require, a new CA: memcached, still trusting the CA it started with, admits no client of the new one, so no refresh can reach it (a new CA takes a restart)', async (t) => {
  const objects = render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' }, metrics: { enabled: true } })
  const mc = running(await startPod(objects, { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca } } }))
  t.teardown(() => mc.stop())
  const exporter = exporterOf(objects, mc.files)
  const other = makePki()
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': other.crt, 'tls.key': other.key, 'ca.crt': other.ca })
  t.match(await tlsUsable(mc.port, { cert: other.crt, key: other.key }), /^refused/, 'the new CA\'s certificate, as the operator and the exporter would present it')
  t.match(await exporter.scrape(mc.port), /^refused/, 'the exporter\'s next scrape, with the swapped files and the CA it read at start')
})

t.test('a key that does not match its certificate (or a chain newer than its key): memcached answers refresh_certs with an error and completes no handshake after (why the operator never asks for such a pair)', async (t) => {
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  const next = renewed(pki)
  const mismatched = { 'tls.crt': next.crt, 'tls.key': pki.key }
  t.equal(certificateSummary({ stringData: mismatched })?.problem, 'key-mismatch', 'the operator\'s check finds it')
  writeAtomic(mc.files.path('/etc/memcached/tls'), mismatched)
  const conn = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
  t.match(await conn.command('refresh_certs'), /^Error loading the key: .*key values mismatch/, 'memcached says so')
  conn.close()
  t.equal(await failedAt(MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })), 'connect', 'the context it serves from holds the new certificate with the old key: no handshake completes')
  // No refresh can reach it any more: only a restart repairs the pod.
})

t.test('a refresh that reads the certificate before the kubelet\'s swap and the key after it: refused, and memcached keeps serving the certificate it had', async (t) => {
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  const next = renewed(pki)
  // The chain of before the swap, the key of after it: what one refresh straddling one swap reads.
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': pki.crt, 'tls.key': next.key })
  const conn = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
  t.match(await conn.command('refresh_certs'), /^Error loading the key: .*key values mismatch/, 'memcached refuses the key')
  conn.close()
  t.equal(await served(mc.port), serial(pki.crt), 'the certificate it had, with its own key: handshakes go on')
  writeAtomic(mc.files.path('/etc/memcached/tls'), { 'tls.crt': next.crt, 'tls.key': next.key })
  const again = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port, tls: {} })
  t.equal(await again.command('refresh_certs'), 'OK', 'the next refresh, after the swap')
  again.close()
  t.equal(await served(mc.port), serial(next.crt))
})

t.test('the reloader sidecar: a changed auth file is reloaded by SIGHUP, the new password accepted and the old refused, the items kept', async (t) => {
  const objects = render({ auth: { enabled: true, secretName: 'users' }, reload: { intervalSeconds: 1 } })
  const mc = running(await startPod(objects, { secrets: { users: { passwords: 'alice:old-password\n' } } }))
  t.teardown(() => mc.stop())
  const pod = podOf(objects)
  const reloader = pod.containers.find((c) => c.name === 'reloader')
  if (!reloader) throw new Error('no reloader container rendered')
  const argv = (reloader.command ?? []).map((a) => mc.files.path(a))
  const cmd = podCommand(argv, { uid: pod.securityContext?.runAsUser, gid: pod.securityContext?.runAsGroup })
  const sidecar = spawn(cmd[0]!, cmd.slice(1), { cwd: '/', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } })
  let log = ''
  sidecar.stdout.on('data', (d: Buffer) => (log += d.toString()))
  sidecar.stderr.on('data', (d: Buffer) => (log += d.toString()))
  t.teardown(() => sidecar.kill('SIGKILL'))
  await eventually('the sidecar to start watching', () => (log.includes('watching the auth file') ? true : undefined), 10_000)

  const alice = await plain(mc.port)
  t.equal(await alice.command('set a 0 0 18\r\nalice old-password\r\n'), 'STORED\r\n')
  t.equal(await setGet(alice, 'warm', 'kept'), 'kept')
  alice.close()

  writeAtomic(mc.files.path('/etc/memcached/auth'), { passwords: 'alice:new-password\n' })
  await eventually('the sidecar to send SIGHUP', () => (log.includes('memcached reloads it (SIGHUP)') ? true : undefined), 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; the sidecar wrote: ${JSON.stringify(log)}, ran ${JSON.stringify(argv)}`)
  })
  const login = async (password: string) => {
    const c = await plain(mc.port)
    try {
      return (await c.command(`set a 0 0 ${6 + password.length}\r\nalice ${password}\r\n`)).trim()
    } finally {
      c.close()
    }
  }
  t.equal(await eventually('the new password accepted', async () => ((await login('new-password')) === 'STORED' ? 'STORED' : undefined), 5000), 'STORED')
  t.equal(await login('old-password'), 'CLIENT_ERROR authentication failure', 'the old password refused')
  const after = await plain(mc.port)
  t.equal(await after.command('set a 0 0 18\r\nalice new-password\r\n'), 'STORED\r\n', 'the new password')
  t.equal(await after.command('get warm\r\n', 'END\r\n'), 'VALUE warm 0 4\r\nkept\r\nEND\r\n', 'the item written before the reload')
  after.close()
})

t.test('cache_memlimit raises and lowers the item memory of a running memcached: limit_maxbytes follows, the items are kept', async (t) => {
  const mc = running(await startArgs(['-m', '64']))
  t.teardown(() => mc.stop())
  const conn = await plain(mc.port)
  t.teardown(() => conn.close())
  t.equal(await setGet(conn, 'warm', 'kept'), 'kept')
  t.equal((await stats(conn)).limit_maxbytes, String(64 * 1024 * 1024))
  const op = await MemcachedConnection.open({ host: '127.0.0.1', port: mc.port })
  t.equal(await op.command('cache_memlimit 128'), 'OK')
  t.equal((await op.stats()).limit_maxbytes, String(128 * 1024 * 1024), 'grown')
  t.equal(await op.command('cache_memlimit 96'), 'OK')
  t.equal((await op.stats()).limit_maxbytes, String(96 * 1024 * 1024), 'shrunk')
  op.close()
  t.equal(await conn.command('get warm\r\n', 'END\r\n'), 'VALUE warm 0 4\r\nkept\r\nEND\r\n', 'the item written before')
})
