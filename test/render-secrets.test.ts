/**
 * Secrets as render inputs: the checksum of a Secret's content, and the `secretChecksum(name)`
 * helper templates call (validated name, the instance's namespace, missing Secrets, offline).
 */
import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { OFFLINE_CHECKSUM, secretChecksum, secretKeys, SecretKeysMissing, secretsFrom, SecretsNotFound, type SecretSource } from '../operator/render/secrets.ts'
import { chartWith, failure } from './support/chart.ts'

const b64 = (s: string) => Buffer.from(s).toString('base64')

t.test('the checksum is the same for data and stringData, whatever the key order', async (t) => {
  const fromApi = secretChecksum({ type: 'Opaque', data: { b: b64('two'), a: b64('one') } })
  t.match(fromApi, /^[0-9a-f]{64}$/)
  t.equal(secretChecksum({ type: 'Opaque', data: { a: b64('one'), b: b64('two') } }), fromApi, 'key order does not matter')
  t.equal(secretChecksum({ stringData: { a: 'one', b: 'two' } }), fromApi, 'stringData is data; an absent type is Opaque, as the API server defaults it')
  t.equal(secretChecksum({ data: { a: b64('one'), b: b64('old') }, stringData: { b: 'two' } }), fromApi, 'stringData wins over data, as the API server merges it')
})

t.test('the checksum changes with any byte of a key, a value or the type', async (t) => {
  const base = secretChecksum({ type: 'Opaque', data: { a: b64('one') } })
  t.not(secretChecksum({ type: 'Opaque', data: { a: b64('onE') } }), base, 'a value')
  t.not(secretChecksum({ type: 'Opaque', data: { b: b64('one') } }), base, 'a key')
  t.not(secretChecksum({ type: 'kubernetes.io/tls', data: { a: b64('one') } }), base, 'the type')
  t.not(secretChecksum({ type: 'Opaque', data: { a: b64('one'), c: '' } }), base, 'an empty key added')
  t.not(secretChecksum({ type: 'Opaque', data: {} }), secretChecksum({ type: 'Opaque', data: { '': '' } }), 'no key and an empty key differ')
})

t.test('keys and values are delimited: moving bytes between them changes the checksum', async (t) => {
  // Concatenated without lengths, each pair would read "ab" + "c".
  t.not(secretChecksum({ stringData: { ab: 'c' } }), secretChecksum({ stringData: { a: 'bc' } }))
  t.not(secretChecksum({ stringData: { a: 'b', c: 'd' } }), secretChecksum({ stringData: { a: 'bcd' } }))
  // Binary values: bytes that are not UTF-8 count as bytes.
  t.not(secretChecksum({ data: { k: Buffer.from([0xff, 0xfe]).toString('base64') } }), secretChecksum({ data: { k: Buffer.from([0xff, 0xfd]).toString('base64') } }))
})

t.test('the checksum is a fixed function of the content', async (t) => {
  // sha256 of: u32(6) "Opaque" u32(1) u32(3) "key" u32(5) "value" — the encoding documented in secrets.ts.
  const { createHash } = await import('node:crypto')
  const u32 = (n: number) => Buffer.from([0, 0, 0, n])
  const expected = createHash('sha256').update(Buffer.concat([u32(6), Buffer.from('Opaque'), u32(1), u32(3), Buffer.from('key'), u32(5), Buffer.from('value')])).digest('hex')
  t.equal(secretChecksum({ type: 'Opaque', data: { key: b64('value') } }), expected)
})

const annotated = (expr: string) =>
  loadChart(
    chartWith({
      'templates/extra.ejs': `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: <%= fullname('extra') %>\n  annotations:\n    checksum/secret: <%= ${expr} %>\ndata: {}\n`,
    }),
  )
const extraOf = (objects: { kind: string; metadata: { name: string; annotations?: Record<string, string> } }[]) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'x-extra')

t.test('secretChecksum(name) gives the checksum of the Secret of that name in the instance\'s namespace', async (t) => {
  const chart = annotated(`secretChecksum('creds')`)
  const sum = secretChecksum({ stringData: { password: 'p' } })
  const other = secretChecksum({ stringData: { password: 'q' } })
  const secrets = secretsFrom(new Map([['team/creds', sum], ['default/creds', other]]))
  const result = renderInstance(chart, { name: 'x', namespace: 'team', spec: { size: 1 }, secrets })
  t.equal(extraOf(result.objects)?.metadata.annotations?.['checksum/secret'], sum)
  t.same(result.secrets, ['team/creds'], 'the render lists the Secrets it referred to')
  const elsewhere = renderInstance(chart, { name: 'x', namespace: 'default', spec: { size: 1 }, secrets })
  t.equal(extraOf(elsewhere.objects)?.metadata.annotations?.['checksum/secret'], other, 'only the instance\'s own namespace is read')
})

t.test('a render that uses no Secret lists none', async (t) => {
  t.same(renderInstance(loadChart(), { name: 'x', namespace: 'default', spec: { size: 1 } }).secrets, [])
})

t.test('a Secret the source does not have fails the whole render, naming it', async (t) => {
  const chart = annotated(`secretChecksum('creds') + secretChecksum('other')`)
  const err = failure(() => renderInstance(chart, { name: 'x', namespace: 'team', spec: { size: 1 }, secrets: secretsFrom(new Map([['team/other', 'abc']])) }))
  t.ok(err instanceof SecretsNotFound)
  t.equal(err.kind, 'secret')
  t.same((err as SecretsNotFound).missing, ['team/creds'])
  t.same(err.problems, ['Secret team/creds not found'])
})

t.test('an optional Secret the source does not have is an empty checksum, still listed; once there, its checksum', async (t) => {
  const chart = annotated(`secretChecksum('issued', { optional: true }) || 'none'`)
  const missing = renderInstance(chart, { name: 'x', namespace: 'team', spec: { size: 1 }, secrets: secretsFrom(new Map()) })
  t.equal(extraOf(missing.objects)?.metadata.annotations?.['checksum/secret'], 'none')
  t.same(missing.secrets, ['team/issued'], 'listed, so that its arrival re-renders the CR')
  const sum = secretChecksum({ stringData: { 'tls.crt': 'c' } })
  const there = renderInstance(chart, { name: 'x', namespace: 'team', spec: { size: 1 }, secrets: secretsFrom(new Map([['team/issued', sum]])) })
  t.equal(extraOf(there.objects)?.metadata.annotations?.['checksum/secret'], sum)
})

t.test('with reload.enabled false, the bundled chart annotates the pods with the checksums of the TLS and auth Secrets; a cert-manager Secret not yet written is left out', async (t) => {
  const tlsSum = secretChecksum({ type: 'kubernetes.io/tls', stringData: { 'tls.crt': 'c', 'tls.key': 'k' } })
  const authSum = secretChecksum({ stringData: { 'auth.txt': 'user:pass' } })
  const podAnnotations = (spec: Record<string, unknown>, have: [string, string][]) => {
    const r = renderInstance(loadChart(), { name: 'c', namespace: 'team', spec, secrets: secretsFrom(new Map(have)) })
    return (r.objects.find((o) => o.kind === 'Deployment') as unknown as { spec: { template: { metadata: { annotations?: Record<string, string> } } } }).spec.template.metadata.annotations
  }
  const off = { reload: { enabled: false } }
  t.same(podAnnotations({ size: 1, tls: { enabled: true, secretName: 'c-tls' }, auth: { enabled: true, secretName: 'c-auth' }, ...off }, [['team/c-tls', tlsSum], ['team/c-auth', authSum]]), { 'checksum/tls-secret': tlsSum, 'checksum/auth-secret': authSum })
  const issuer = { enabled: true, issuerRef: { name: 'ca', kind: 'ClusterIssuer' } }
  t.same(podAnnotations({ size: 1, tls: { enabled: true, certManager: issuer }, ...off }, []), undefined, 'before cert-manager wrote it')
  t.same(podAnnotations({ size: 1, tls: { enabled: true, certManager: issuer }, ...off }, [['team/c-tls', tlsSum]]), { 'checksum/tls-secret': tlsSum }, 'once written')
  const err = failure(() => podAnnotations({ size: 1, tls: { enabled: true, secretName: 'c-tls' }, ...off }, []))
  t.same((err as SecretsNotFound).missing, ['team/c-tls'], 'a Secret the user names must exist')
})

t.test('the key names of a Secret, from data and stringData, sorted, never a value', async (t) => {
  t.same(secretKeys({ data: { 'tls.key': b64('k'), 'ca.crt': b64('c') }, stringData: { 'tls.crt': 'x', 'ca.crt': 'y' } }), ['ca.crt', 'tls.crt', 'tls.key'])
  t.same(secretKeys({ data: null }), [])
  t.same(secretKeys({ data: 'text' as unknown as Record<string, string> }), [])
})

t.test('a Secret found without a key the pods read fails the render, naming each key, its Secret and what reads it', async (t) => {
  const have = new Map([['team/c-tls', ['tls.crt']], ['team/c-auth', ['other']]])
  const source: SecretSource = { checksum: (ns, name) => (have.has(`${ns}/${name}`) ? 'sum' : undefined), keys: (ns, name) => have.get(`${ns}/${name}`) }
  const render = (spec: Record<string, unknown>, s: SecretSource = source) => renderInstance(loadChart(), { name: 'c', namespace: 'team', spec: { size: 1, ...spec }, secrets: s })
  const err = failure(() => render({ tls: { enabled: true, secretName: 'c-tls', clientAuth: 'once' }, auth: { enabled: true, secretName: 'c-auth' } }))
  t.ok(err instanceof SecretKeysMissing)
  t.equal((err as SecretKeysMissing).kind, 'secret')
  t.same((err as SecretKeysMissing).problems, [
    'Secret team/c-tls has no key "tls.key", which memcached serves TLS with (ssl_key)',
    'Secret team/c-tls has no key "ca.crt", which memcached verifies client certificates against (spec.tls.clientAuth is once)',
    'Secret team/c-auth has no key "passwords", which holds the user:password lines (spec.auth.secretKey)',
  ])
  have.set('team/c-tls', ['tls.crt', 'tls.key'])
  t.ok(render({ tls: { enabled: true, secretName: 'c-tls' } }), 'without client certificates, no ca.crt is needed')
  t.ok(render({ tls: { enabled: true, secretName: 'c-tls', clientAuth: 'require' } }, { checksum: () => 'sum' }), 'a source that knows no key names checks none (diff\'s GETs, offline)')
  const missingSecret = failure(() => render({ tls: { enabled: true, secretName: 'gone' }, auth: { enabled: true, secretName: 'c-auth' } }))
  t.ok(missingSecret instanceof SecretsNotFound, 'a Secret that is not there at all is said first')
})

t.test('a template error wins over a missing Secret: it has to be fixed first', async (t) => {
  const chart = loadChart(chartWith({ 'templates/extra.ejs': `a: <%= secretChecksum('creds') %>\n<% fail('broken') %>\n` }))
  const err = failure(() => renderInstance(chart, { name: 'x', namespace: 'team', spec: { size: 1 }, secrets: secretsFrom(new Map()) }))
  t.equal(err.kind, 'template')
  t.match(err.problems[0], /^templates\/extra\.ejs:2: broken/)
})

t.test('an invalid Secret name is a template error naming the value and the line', async (t) => {
  for (const [expr, shown] of [
    [`secretChecksum('Not_Valid')`, '"Not_Valid"'],
    [`secretChecksum('')`, '""'],
    [`secretChecksum('a'.repeat(254))`, `"${'a'.repeat(254)}"`],
    [`secretChecksum(values.nothing)`, 'undefined'],
    [`secretChecksum(42)`, '42 (number)'],
  ] as const) {
    const err = failure(() => renderInstance(annotated(expr), { name: 'x', namespace: 'team', spec: { size: 1 }, secrets: secretsFrom(new Map()) }))
    t.equal(err.kind, 'template', expr)
    t.match(err.problems[0], `templates/extra.ejs:6: secretChecksum: ${shown} is not a valid Secret name (a DNS subdomain`, expr)
  }
})

t.test('without a source (offline), every checksum is a placeholder and the Secrets are listed', async (t) => {
  const result = renderInstance(annotated(`secretChecksum('creds')`), { name: 'x', namespace: 'team', spec: { size: 1 } })
  t.equal(extraOf(result.objects)?.metadata.annotations?.['checksum/secret'], OFFLINE_CHECKSUM)
  t.same(result.secrets, ['team/creds'])
})
