/**
 * An OpenAI-compatible chat endpoint on loopback for the code-tree launch tests: it answers every chat completion with
 * a ```python block of `double`, wrong (`x + 1`) until the chat shows a failing assertion (rich feedback's `At:
 * \`assert …\``), then right. Enough for `mars-lab code tree --endpoint` to grow a tree with a failing node and a
 * refinement that fixes it, without a model. With `hang`, it never answers (a slow model, for a stop).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export const DOUBLE_TASK = {
  task_id: 7,
  text: 'Write a function to double a number.',
  code: 'def double(x):\n    return 2 * x\n',
  test_list: ['assert double(1) == 2', 'assert double(0) == 0', 'assert double(3) == 6'],
  test_setup_code: '',
};

export async function scriptedChatEndpoint(
  opts: { hang?: boolean } = {},
): Promise<{ baseUrl: string; close: () => void }> {
  const server = http.createServer((req, res) => {
    if (opts.hang) return; // the request stays open until the client goes away or the server closes
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      const ask = JSON.parse(body || '{}') as { messages?: { content: string }[] };
      const fixed = (ask.messages?.at(-1)?.content ?? '').includes('At: `assert');
      const code = fixed ? 'def double(x):\n    return 2 * x\n' : 'def double(x):\n    return x + 1\n';
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          created: 0,
          model: 'scripted',
          choices: [
            { index: 0, message: { role: 'assistant', content: `\`\`\`python\n${code}\`\`\`` }, finish_reason: 'stop' },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
