import t from 'tap'
import { loadChart } from '../operator/render/chart.ts'
import { renderInstance } from '../operator/render/engine.ts'
import { guardObjects } from '../operator/render/guard.ts'
import { dnsLabel, isDnsLabel, isDnsSubdomain, labelValue } from '../operator/render/names.ts'

const chart = loadChart()
const longName = (c: string) => `${c}${'a'.repeat(200)}.${'b'.repeat(51)}`

t.test('a 253-character CR name still renders valid objects', async (t) => {
  const name = longName('x')
  t.equal(name.length, 253)
  t.ok(isDnsSubdomain(name))
  const r = renderInstance(chart, { name, namespace: 'default', spec: { size: 3, serviceAccount: { create: true } } })
  t.same(guardObjects(r.objects, 'default', loadChart().kinds), [], 'names and labels are valid')
  for (const o of r.objects) {
    t.ok(isDnsLabel(o.metadata.name), `${o.kind} name ${o.metadata.name} is a DNS-1035 label`)
    t.ok(o.metadata.name.length <= 63)
    t.ok((o.metadata.labels?.['app.kubernetes.io/instance'] ?? '').length <= 63)
  }
})

t.test('shortened names are stable and unique', async (t) => {
  const a = longName('x')
  const b = longName('y')
  t.equal(dnsLabel(a), dnsLabel(a))
  t.not(dnsLabel(a), dnsLabel(b))
  const shared = 'c'.repeat(70)
  t.not(dnsLabel(`${shared}1`), dnsLabel(`${shared}2`), 'names that share the kept prefix still differ')
  t.not(labelValue(`${shared}1`), labelValue(`${shared}2`))
})

t.test('names that are not DNS-1035 labels are made valid, never colliding with their sanitised form', async (t) => {
  t.equal(dnsLabel('memcached-sample'), 'memcached-sample', 'valid names are kept')
  const dotted = dnsLabel('cache.v1')
  t.ok(isDnsLabel(dotted))
  t.not(dotted, dnsLabel('cache-v1'))
  t.ok(isDnsLabel(dnsLabel('1cache')), 'a leading digit is fixed')
  t.equal(labelValue('short'), 'short')
  t.equal(labelValue('x'.repeat(63)), 'x'.repeat(63))
  t.equal(labelValue('x'.repeat(64)).length, 63)
})
