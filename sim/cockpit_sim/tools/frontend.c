/* The front-end of a simulated node tool (docker, nvidia-smi, ssh), compiled at fleet start: it
 * hands its call to the fleet's resident tool service and exits as the tool did.
 *
 * The tool's name is this file's name (/proc/self/exe: the copies in bin/ are named after their
 * tools); the service's socket is ../tools.sock from there. The request (sim/cockpit_sim/tools/
 * callproto.py has the same layout) carries argv, the environment, nice and umask, with stdin,
 * stdout, stderr and the cwd attached as descriptors. Signals the front-end receives are
 * forwarded as one byte each; the answer is the tool's wait status: the same exit code, or the
 * same signal raised here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define SERVICE_GONE 255
#define CWD_BIT 3
#define CONNECT_TRIES 120 /* x 25 ms: rides over a restart of the service */

extern char **environ;

static const int FORWARDED[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM,
                                SIGUSR1, SIGUSR2, SIGALRM, SIGWINCH};
#define NFORWARDED (sizeof FORWARDED / sizeof FORWARDED[0])

struct request {
    char magic[4];
    uint32_t payload, argc, envc, mask;
    int32_t nice;
    uint32_t umask, ignored;
};

struct reply {
    char magic[4];
    int32_t status;
};

static int service = -1;
static const char *tool = "tool";

static void forward(int sig) {
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    (void)send(service, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    errno = saved;
}

static void fail(const char *what) {
    fprintf(stderr, "%s: node tool service: %s: %s\n", tool, what, strerror(errno));
    exit(SERVICE_GONE);
}

static int connect_service(const char *bin_dir) {
    int dir = open(bin_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        fail(bin_dir);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d/../tools.sock", dir);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        fail("socket");
    for (int i = 0; connect(sock, (struct sockaddr *)&addr, sizeof addr) != 0; i++) {
        if ((errno != ENOENT && errno != ECONNREFUSED && errno != EAGAIN) || i >= CONNECT_TRIES)
            fail("connect");
        usleep(25000);
    }
    close(dir);
    return sock;
}

static char *payload(int argc, char **argv, uint32_t *size, uint32_t *envc) {
    size_t total = strlen(tool) + 1;
    for (int i = 0; i < argc; i++)
        total += strlen(argv[i]) + 1;
    *envc = 0;
    for (char **e = environ; *e; e++, (*envc)++)
        total += strlen(*e) + 1;
    char *buf = malloc(total), *p = buf;
    if (!buf)
        fail("malloc");
    p = stpcpy(p, tool) + 1;
    for (int i = 0; i < argc; i++)
        p = stpcpy(p, argv[i]) + 1;
    for (char **e = environ; *e; e++)
        p = stpcpy(p, *e) + 1;
    *size = (uint32_t)total;
    return buf;
}

static void send_request(int argc, char **argv, uint32_t ignored) {
    struct request req = {.magic = {'C', 'K', 'T', '1'}, .argc = (uint32_t)argc};
    req.ignored = ignored;
    char *body = payload(argc, argv, &req.payload, &req.envc);
    int fds[4], nfds = 0;
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) != -1) {
            fds[nfds++] = fd;
            req.mask |= 1u << fd;
        }
    int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cwd >= 0) {
        fds[nfds++] = cwd;
        req.mask |= 1u << CWD_BIT;
    }
    errno = 0;
    req.nice = getpriority(PRIO_PROCESS, 0);
    mode_t mask = umask(0);
    umask(mask);
    req.umask = mask;

    struct iovec iov[2] = {{&req, sizeof req}, {body, req.payload}};
    char control[CMSG_SPACE(sizeof fds)] = {0};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2, .msg_control = control};
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
    memcpy(CMSG_DATA(cmsg), fds, sizeof(int) * nfds);
    size_t left = sizeof req + req.payload;
    ssize_t sent;
    while ((sent = sendmsg(service, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    if (sent < 0)
        fail("send");
    /* the rest of a long environment (descriptors went with the first byte) */
    char *rest = body + (sent > (ssize_t)sizeof req ? (size_t)sent - sizeof req : 0);
    left -= (size_t)sent;
    if ((size_t)sent < sizeof req) {
        errno = EPROTO;
        fail("short send");
    }
    while (left > 0) {
        ssize_t n = send(service, rest, left, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            fail("send");
        rest += n;
        left -= (size_t)n;
    }
    if (cwd >= 0)
        close(cwd);
    free(body);
}

static void exit_as(int status) {
    if (WIFEXITED(status))
        exit(WEXITSTATUS(status));
    if (!WIFSIGNALED(status))
        exit(SERVICE_GONE);
    int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL);
    raise(sig);
    exit(128 + sig);
}

int main(int argc, char **argv) {
    static char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        fail("/proc/self/exe");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    tool = slash + 1;

    /* signals wait (blocked) until the request is out, then are forwarded in order */
    sigset_t forwarded, previous;
    sigemptyset(&forwarded);
    struct sigaction action = {.sa_handler = forward, .sa_flags = SA_RESTART};
    for (size_t i = 0; i < NFORWARDED; i++)
        sigaddset(&forwarded, FORWARDED[i]);
    sigprocmask(SIG_BLOCK, &forwarded, &previous);
    action.sa_mask = forwarded;
    uint32_t ignored = 0; /* the tool ignores what its caller made this process ignore */
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction old;
        if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            ignored |= 1u << sig;
    }
    for (size_t i = 0; i < NFORWARDED; i++)
        if (!(ignored & (1u << FORWARDED[i])))
            sigaction(FORWARDED[i], &action, NULL);
    service = connect_service(exe);
    send_request(argc, argv, ignored);
    sigprocmask(SIG_SETMASK, &previous, NULL);

    struct reply reply;
    size_t got = 0;
    while (got < sizeof reply) {
        ssize_t r = read(service, (char *)&reply + got, sizeof reply - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            errno = r == 0 ? EPIPE : errno;
            fail("gone during the call");
        }
        got += (size_t)r;
    }
    if (memcmp(reply.magic, "CKS1", 4) != 0) {
        errno = EPROTO;
        fail("bad answer");
    }
    exit_as(reply.status);
}
