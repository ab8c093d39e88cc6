/* servers.c - see servers.h. */
#include "servers.h"

#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

int sw_test_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        fail_msg("cannot find a free port");
    close(fd);
    return ntohs(a.sin_port);
}

pid_t sw_test_start_server(const char *conf, int sentinel)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (sentinel)
            execlp("redis-server", "redis-server", conf, "--sentinel", (char *)NULL);
        else
            execlp("redis-server", "redis-server", conf, (char *)NULL);
        _exit(127);
    }
    return pid;
}

int sw_test_stop_servers(pid_t *pids, size_t n, char *dir)
{
    for (size_t i = 0; i < n; i++)
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    if (dir[0] != '\0') {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
            return -1;
        dir[0] = '\0';
    }
    return 0;
}
