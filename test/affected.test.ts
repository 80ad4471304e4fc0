// `npm run test:affected` (test/support/affected.ts): which test files a change can affect.
import t from 'tap'
import { affectedTests, reachedByTests } from './support/affected.ts'

const reached = new Map([
  ['test/a.test.ts', new Set(['test/a.test.ts', 'operator/render/engine.ts', 'operator/render/chart.ts'])],
  ['test/b.test.ts', new Set(['test/b.test.ts', 'operator/controller/queue.ts'])],
  ['test/docs.test.ts', new Set(['test/docs.test.ts', 'test/support/docs.ts', 'test/support/operator.ts'])],
  ['test/docs-cli.test.ts', new Set(['test/docs-cli.test.ts', 'test/support/docs.ts'])],
])

t.test('a test file is affected by a file it imports, directly or not', async (t) => {
  t.same(affectedTests(['operator/controller/queue.ts'], reached), ['test/b.test.ts'])
  t.same(affectedTests(['operator/render/engine.ts', 'operator/controller/queue.ts'], reached), ['test/a.test.ts', 'test/b.test.ts'])
  t.same(affectedTests(['test/b.test.ts'], reached), ['test/b.test.ts'], 'a changed test file runs itself')
})

t.test('files read rather than imported: the chart through the render engine, the docs through the doc tests\' runner', async (t) => {
  t.same(affectedTests(['charts/memcached/templates/deployment.ejs'], reached), ['test/a.test.ts'])
  t.same(affectedTests(['docs/cli.md'], reached), ['test/docs-cli.test.ts', 'test/docs.test.ts'])
  t.same(affectedTests(['README.md'], reached), ['test/docs-cli.test.ts', 'test/docs.test.ts'])
})

t.test('a change no test reaches affects none', async (t) => {
  t.same(affectedTests(['operator/reconcile/pacing.ts', 'Dockerfile.unrelated'], reached), [])
})

t.test("the tests' import graph is esbuild's: files reached through other files count", async (t) => {
  const graph = await reachedByTests(['test/controller-queue.test.ts', 'test/render-golden.test.ts'])
  const queue = graph.get('test/controller-queue.test.ts')
  t.ok(queue?.has('operator/controller/queue.ts'), 'a file the test imports')
  const render = graph.get('test/render-golden.test.ts')
  t.ok(render?.has('operator/render/chart.ts'), 'a file reached through the render engine')
  t.notOk(queue?.has('operator/sandbox/cluster.ts'), 'not a file it never reaches')
})
