import t from 'tap'
import { startSandbox } from '../operator/sandbox/index.ts'
import { startControllers } from '../operator/sandbox/controllers/index.ts'
import type { ApiRequest } from '../operator/sandbox/types.ts'
import { kubectlFor } from './support/kubectl.ts'

type Obj = Record<string, any>

const manifest = (name: string) => JSON.stringify({
  apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name, namespace: 'default' },
  spec: { replicas: 2, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38' }] } } },
})

t.test('kubectl rollout, scale and delete with each cascade policy', async (t) => {
  const sb = await startSandbox({ controllers: false })
  const controllers = startControllers(sb.cluster, { podReadyDelayMs: 20 })
  t.teardown(async () => {
    await controllers.stop()
    await sb.close()
  })
  const kubectl = kubectlFor(sb.kubeconfigPath)
  const list = async (resource: string, group = '') => ((await sb.cluster.handle({ verb: 'list', group, version: 'v1', resource, namespace: 'default', query: new URLSearchParams() } as ApiRequest)).body as Obj).items as Obj[]

  for (const name of ['bg', 'fg', 'orphan']) await kubectl(['apply', '--server-side', '-f', '-'], manifest(name))
  t.match(await kubectl(['rollout', 'status', 'deployment/bg', '--timeout=30s']), /successfully rolled out/)
  await kubectl(['scale', 'deployment/bg', '--replicas=3'])
  t.match(await kubectl(['rollout', 'status', 'deployment/bg', '--timeout=30s']), /successfully rolled out/)
  t.equal((await list('pods')).filter((p) => p.metadata.labels.app === 'bg').length, 3)
  await kubectl(['set', 'image', 'deployment/bg', 'memcached=memcached:1.6.39'])
  t.match(await kubectl(['rollout', 'status', 'deployment/bg', '--timeout=30s']), /successfully rolled out/)
  t.match(await kubectl(['rollout', 'history', 'deployment/bg']), /\n1\s.*\n2\s/)
  await kubectl(['rollout', 'status', 'deployment/fg', '--timeout=30s'])
  await kubectl(['rollout', 'status', 'deployment/orphan', '--timeout=30s'])

  // kubectl delete waits until the object is gone: a Foreground delete only returns once the
  // collector has deleted the dependents and removed the finalizer.
  await kubectl(['delete', 'deployment/bg', '--cascade=background'])
  await kubectl(['delete', 'deployment/fg', '--cascade=foreground'])
  t.same((await list('replicasets', 'apps')).filter((r) => r.metadata.labels.app === 'fg'), [], 'foreground: ReplicaSet gone before its owner')
  await kubectl(['delete', 'deployment/orphan', '--cascade=orphan'])
  const orphaned = (await list('replicasets', 'apps')).filter((r) => r.metadata.labels.app === 'orphan')
  t.equal(orphaned.length, 1)
  t.notOk(orphaned[0]?.metadata.ownerReferences, 'orphan: the ReplicaSet stays, without its owner reference')
  for (let i = 0; i < 400 && (await list('pods')).some((p) => p.metadata.labels.app === 'bg'); i++) await new Promise((r) => setTimeout(r, 25))
  t.same((await list('pods')).map((p) => p.metadata.labels.app).sort(), ['orphan', 'orphan'], 'background: pods collected; orphaned pods kept')
})
