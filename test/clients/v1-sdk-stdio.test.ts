/** The v1 TypeScript SDK over stdio (`forkbox mcp`, a client of a real daemon): see v1-sdk-suite.ts. */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { forkboxMcpServer } from '../helpers/mcp-stdio.ts';
import { suite } from './v1-sdk-suite.ts';

suite('stdio', (_d, stateDir) => new StdioClientTransport(forkboxMcpServer(stateDir)));
