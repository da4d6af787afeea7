import { freePort } from '../helpers/processes';

describe('freePort', () => {
  test('when one process asks for 500 ports in a row, then no port is handed out twice', async () => {
    // The system may offer a port again as soon as it is released.
    const ports: number[] = [];
    for (let i = 0; i < 500; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(500);
    expect(ports.every((port) => port > 0 && port < 65536)).toBe(true);
  });
});
