/**
 * The operator's Secret cache entries (metadata and checksum, never the content) and the record of
 * which CRs referred to which Secrets.
 */
import t from 'tap'
import type { KubeObject } from '../operator/controller/client.ts'
import { secretChecksum } from '../operator/render/secrets.ts'
import { SecretReferences, secretSummary } from '../operator/reconcile/secrets.ts'
import { DEGRADED_REASON, outcomeOfRenderError } from '../operator/reconcile/status.ts'
import { SecretsNotFound } from '../operator/render/secrets.ts'

t.test('a cached Secret keeps its identity, labels and checksum, and nothing of its content', async (t) => {
  const value = 'cached-value-Xy8dP3qL'
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'team', uid: 'u1', resourceVersion: '7', labels: { 'cache.example.com/memcached-input': 'true' }, annotations: { 'kubectl.kubernetes.io/last-applied-configuration': `{"stringData":{"k":"${value}"}}` }, managedFields: [{ manager: 'kubectl' }] },
    type: 'Opaque',
    data: { k: Buffer.from(value).toString('base64') },
  } as unknown as KubeObject
  const summary = secretSummary(secret)
  t.same(summary, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'team', uid: 'u1', resourceVersion: '7', labels: { 'cache.example.com/memcached-input': 'true' } },
    checksum: secretChecksum({ type: 'Opaque', stringData: { k: value } }),
    keys: ['k'],
  })
  const text = JSON.stringify(summary)
  t.notOk(text.includes(value) || text.includes(Buffer.from(value).toString('base64')), 'neither the value nor its base64 (annotations, which may copy it, are dropped too)')
})

t.test('a malformed Secret is summarised too: the transform never fails (the informer would cache a failure as it came)', async (t) => {
  for (const odd of [{ data: { k: 42 } }, { data: 'text' }, { data: null, stringData: ['x'] }, { type: 7 }]) {
    const summary = secretSummary({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, ...odd } as unknown as KubeObject)
    t.match(summary.checksum, /^[0-9a-f]{64}$/, JSON.stringify(odd))
    t.notOk('data' in summary || 'stringData' in summary)
    t.ok(Array.isArray(summary.keys))
  }
})

t.test('a change of a Secret maps to the CRs whose last render referred to it, and to no other', async (t) => {
  const refs = new SecretReferences()
  refs.set('team/a', ['team/tls', 'team/auth'])
  refs.set('team/b', ['team/tls'])
  refs.set('team/c', [])
  t.same(refs.referrers('team/tls').sort(), ['team/a', 'team/b'])
  t.same(refs.referrers('team/auth'), ['team/a'])
  t.same(refs.referrers('other/tls'), [], 'another namespace\'s Secret of that name')
  refs.set('team/a', ['team/auth'])
  t.same(refs.referrers('team/tls'), ['team/b'], 'a render replaces what the CR referred to before')
  refs.forget('team/b')
  t.same(refs.referrers('team/tls'), [], 'a deleted CR refers to nothing')
  t.same(refs.referrers('team/auth'), ['team/a'])
})

t.test('a render missing Secrets is a SecretNotFound outcome', async (t) => {
  const outcome = outcomeOfRenderError(new SecretsNotFound(['team/tls']))
  t.equal(outcome.kind, 'secret-not-found')
  t.equal(DEGRADED_REASON[outcome.kind], 'SecretNotFound')
})
