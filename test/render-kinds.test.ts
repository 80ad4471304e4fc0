/** kinds.yaml: what a chart declares it may render, read and checked when the chart loads. */
import { appendFileSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { chartFiles, DEFAULT_CHART_DIR, loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { RenderError } from '../operator/render/errors.ts'
import { chartChanged, fingerprint } from '../operator/snapshot/fingerprint.ts'
import { chartWith } from './support/chart.ts'

const problems = (kinds: string): string[] => {
  const dir = chartWith({ 'kinds.yaml': kinds })
  try {
    loadChart(dir)
  } catch (err) {
    if (err instanceof RenderError) return err.problems.map((p) => p.replace(`${dir}/`, ''))
    throw err
  }
  throw new Error('the chart loaded')
}

t.test('the bundled chart declares the kinds it renders, the add-ons optional', async (t) => {
  t.same(loadChart().kinds.map((k) => `${k.apiVersion} ${k.kind} ${k.resource}${k.optional ? ' optional' : ''}`), [
    'v1 ServiceAccount serviceaccounts',
    'v1 ConfigMap configmaps',
    'v1 Service services',
    'apps/v1 Deployment deployments',
    'apps/v1 StatefulSet statefulsets',
    'policy/v1 PodDisruptionBudget poddisruptionbudgets',
    'networking.k8s.io/v1 NetworkPolicy networkpolicies',
    'monitoring.coreos.com/v1 ServiceMonitor servicemonitors optional',
    'monitoring.coreos.com/v1 PrometheusRule prometheusrules optional',
    'cert-manager.io/v1 Certificate certificates optional',
  ])
})

t.test('kinds.yaml is one of the files the render snapshot fingerprints: changing it makes the snapshot stale', async (t) => {
  t.ok(chartFiles(DEFAULT_CHART_DIR).includes(join(DEFAULT_CHART_DIR, 'kinds.yaml')))
  const dir = chartWith({})
  const fp = fingerprint(chartFiles(dir))
  t.notOk(chartChanged(dir, fp))
  appendFileSync(join(dir, 'kinds.yaml'), '  - {apiVersion: coordination.k8s.io/v1, kind: Lease, resource: leases}\n')
  t.ok(chartChanged(dir, fp), 'a kind declared')
})

t.test('a declared kind is rendered; the same kind undeclared is refused by the guard', async (t) => {
  const template = 'apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: <%= fullname() %>\nspec:\n  holderIdentity: nobody\n'
  const kinds = readFileSync(join(DEFAULT_CHART_DIR, 'kinds.yaml'), 'utf8')
  const declared = loadChart(chartWith({ 'templates/lease.ejs': template, 'kinds.yaml': `${kinds}  - apiVersion: coordination.k8s.io/v1\n    kind: Lease\n    resource: leases\n` }))
  const r = renderInstance(declared, { name: 'c', namespace: 'default', spec: { size: 1 } })
  t.ok(r.objects.some((o) => o.kind === 'Lease' && o.metadata.name === 'c'))
  const undeclared = loadChart(chartWith({ 'templates/lease.ejs': template }))
  t.throws(() => renderInstance(undeclared, { name: 'c', namespace: 'default', spec: { size: 1 } }), /Lease\/c: kind coordination\.k8s\.io\/v1 Lease is not one the operator manages/)
})

t.test('bad declarations are refused with the file and the index of each', async (t) => {
  t.same(problems('kinds:\n  - apiVersion: v1\n    kind: Service\n  - kind: ConfigMap\n    resource: configmaps\n'), [
    'kinds.yaml: kinds[0]: resource is required',
    'kinds.yaml: kinds[1]: apiVersion is required',
  ], 'missing fields')
  t.same(problems('kinds:\n  - {apiVersion: v1, kind: Service, resource: services}\n  - {apiVersion: v1, kind: Service, resource: svc}\n  - {apiVersion: apps/v1, kind: Deploy, resource: services}\n  - {apiVersion: v1, kind: Other, resource: services}\n'), [
    'kinds.yaml: kinds[1]: duplicate of kinds[0] (Service in group "", resource svc): each kind is declared once',
    'kinds.yaml: kinds[3]: duplicate of kinds[0] (Other in group "", resource services): each kind is declared once',
  ], 'duplicate kinds and resources (apps/services is another resource)')
  t.same(problems('kinds:\n  - {apiVersion: v1, kind: Service, resource: Services}\n  - {apiVersion: v1, kind: service, resource: a/b}\n  - {apiVersion: apps, kind: Deployment, resource: deployments}\n  - {apiVersion: Apps/v1, kind: Deployment, resource: deployments}\n'), [
    'kinds.yaml: kinds[0]: resource "Services": must be the lowercase plural resource name, e.g. deployments',
    'kinds.yaml: kinds[1]: kind "service": must be CamelCase letters and digits, e.g. Deployment',
    'kinds.yaml: kinds[1]: resource "a/b": must be the lowercase plural resource name, e.g. deployments',
    'kinds.yaml: kinds[2]: apiVersion "apps": the core group has only version v1; other groups are written <group>/<version>',
    'kinds.yaml: kinds[3]: apiVersion "Apps/v1": must be <group>/<version>, e.g. apps/v1',
  ], 'bad names')
  t.same(problems('kinds:\n  - {apiVersion: v1, kind: Service, resource: services, optinal: true}\n  - {apiVersion: v1, kind: ConfigMap, resource: configmaps, optional: "yes"}\nextra: 1\n'), [
    'kinds.yaml: unknown key "extra" (only "kinds" is allowed)',
    'kinds.yaml: kinds[0]: unknown key "optinal" (allowed: apiVersion, kind, resource, optional, patchable)',
    'kinds.yaml: kinds[1]: optional must be true or false',
  ], 'unknown keys, and optional only a boolean')
  t.same(problems('kinds: []\n'), ['kinds.yaml: kinds: must be a non-empty list'])
  t.same(problems('kinds:\n  - v1/Service\n'), ['kinds.yaml: kinds[0]: must be a map with apiVersion, kind and resource'])
  t.match(problems('kinds:\n  - {apiVersion: v1, kind: Service, kind: Pod}\n')[0], /kinds\.yaml:2: Map keys must be unique/, 'YAML errors carry the line')
})

t.test('a chart without kinds.yaml does not load', async (t) => {
  const dir = chartWith({ 'kinds.yaml': null })
  t.throws(() => loadChart(dir), { message: new RegExp(`chart ${dir}: cannot read kinds\\.yaml: ENOENT`) })
})
