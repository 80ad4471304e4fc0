import t from 'tap'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { startSandbox } from '../operator/sandbox/index.ts'
import { kubectlPath } from './support/tools.ts'

const manifest = JSON.stringify({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'cache', namespace: 'default', labels: { app: 'cache', tier: 'memory' } },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'cache' } },
    template: { metadata: { labels: { app: 'cache' } }, spec: { containers: [{ name: 'memcached', image: 'memcached:1.6.38' }] } },
  },
})

t.test('kubectl client-side apply, then server-side apply of the same manifest: labels survive the migration', async (t) => {
  const sb = await startSandbox({ controllers: false })
  t.teardown(() => sb.close())
  const kubectl = async (args: string[], input?: string): Promise<string> => {
    const run = promisify(execFile)(kubectlPath(), ['--kubeconfig', sb.kubeconfigPath, ...args], { timeout: 60_000 })
    if (input !== undefined) run.child.stdin?.end(input)
    return (await run).stdout
  }
  await kubectl(['apply', '-f', '-'], manifest)
  await kubectl(['apply', '--server-side', '-f', '-'], manifest)
  const d = JSON.parse(await kubectl(['get', 'deployment/cache', '-o', 'json', '--show-managed-fields'])) as {
    metadata: { labels?: Record<string, string>; managedFields?: { manager: string; operation: string; fieldsV1: Record<string, unknown> }[] }
    spec: { selector: unknown; template: { metadata: { labels?: Record<string, string> } } }
  }
  t.same(d.metadata.labels, { app: 'cache', tier: 'memory' })
  t.same(d.spec.selector, { matchLabels: { app: 'cache' } })
  t.same(d.spec.template.metadata.labels, { app: 'cache' })
  const applier = d.metadata.managedFields?.find((e) => e.manager === 'kubectl' && e.operation === 'Apply')
  t.same(applier?.fieldsV1['f:metadata'], { 'f:labels': { 'f:app': {}, 'f:tier': {} } }, 'the applier owns the applied labels, not the map')
  t.notOk(d.metadata.managedFields?.some((e) => e.manager === 'kubectl-client-side-apply'), 'the client-side apply entry was migrated away')
  t.match(await kubectl(['apply', '--server-side', '-f', '-'], manifest), /serverside-applied/, 'a second server-side apply still works')
})
