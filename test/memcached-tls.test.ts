/**
 * The chart's TLS against the real memcached: `-Z` with the rendered options and the Secret's
 * files where the pod mounts them; node:tls as the client. A plaintext client gets nothing,
 * client certificates are required and checked against ca.crt when clientAuth asks for them.
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { plain, setGet, tls, tlsUsable } from './support/memcached-client.ts'
import { Memcached, running, startPod } from './support/memcached.ts'
import { makePki } from './support/pki.ts'

const chart = loadChart()
const pki = makePki()
const render = (spec: Record<string, unknown>) => renderInstance(chart, { name: 'cache', namespace: 'team', spec: { size: 1, ...spec } }).objects

t.test('tls.enabled: memcached serves TLS only, with the Secret\'s certificate', async (t) => {
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } }))
  t.teardown(() => mc.stop())
  const conn = await tls(mc.port, { ca: pki.ca, rejectUnauthorized: true })
  t.teardown(() => conn.close())
  t.equal(await setGet(conn, 'k', 'over tls'), 'over tls', 'set and get over TLS, the server verified against the CA')
  const clear = await plain(mc.port)
  clear.write('version\r\n')
  t.notMatch(await clear.closed().catch((e: Error) => e.message), /VERSION/, 'a plaintext client gets no answer')
})

t.test('clientAuth require: no client certificate and another CA\'s certificate are refused, the CA\'s accepted', async (t) => {
  const objects = render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' }, metrics: { enabled: true } })
  const mc = running(await startPod(objects, { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca } } }))
  t.teardown(() => mc.stop())
  t.match(await tlsUsable(mc.port, { ca: pki.ca, rejectUnauthorized: true }), /^refused/, 'no client certificate')
  t.match(await tlsUsable(mc.port, { ca: pki.ca, cert: pki.rogueCrt, key: pki.rogueKey }), /^refused/, 'a certificate of another CA')
  // What the exporter sidecar does (its rendered flags): the pod's certificate, the server verified as <name>.<namespace>.svc.
  t.match(await tlsUsable(mc.port, { ca: pki.ca, cert: pki.crt, key: pki.key, servername: 'cache.team.svc', rejectUnauthorized: true }), /^VERSION /, 'the CA\'s certificate, as the exporter presents it')
})

t.test('clientAuth request: a client without a certificate is served, one of another CA refused', async (t) => {
  const mc = running(await startPod(render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'request' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key, 'ca.crt': pki.ca } } }))
  t.teardown(() => mc.stop())
  t.match(await tlsUsable(mc.port, { ca: pki.ca }), /^VERSION /)
  t.match(await tlsUsable(mc.port, { ca: pki.ca, cert: pki.rogueCrt, key: pki.rogueKey }), /^refused/)
})

t.test('a TLS Secret without ca.crt while clientAuth asks for client certificates: memcached exits', async (t) => {
  const r = await startPod(render({ tls: { enabled: true, secretName: 'mc-tls', clientAuth: 'require' } }), { secrets: { 'mc-tls': { 'tls.crt': pki.crt, 'tls.key': pki.key } } })
  if (r instanceof Memcached) {
    await r.stop()
    t.fail('memcached started without its CA file')
    return
  }
  t.not(r.code, 0)
  t.match(r.output, /CA/i, 'it names the CA certificate')
})
