/* Drives the demo library of test_capi_build.py: results, error values, and the program's SIGINT handler. */
#include <signal.h>
#include <stdlib.h>
#include "common.h"
#include "demo.h"

static void on_sigint(int sig) { (void)sig; }

int main(void)
{
    int v = 41, w = 0;
    signal(SIGINT, on_sigint);
    printf("add %d\n", demo_add(1, &v));
    printf("raise %d\n", demo_raise(3));
    printf("pointer0 %d\n", demo_pointer(0) == NULL);
    int *p = demo_pointer(1);
    printf("pointer1 %d\n", p ? *p : -1);
    printf("pointer_error %d\n", demo_pointer(-1) == NULL);
    setenv("DEMO_VALUE", "17", 1);
    printf("getenv %d\n", demo_getenv("DEMO_VALUE"));
    demo_void(&w);
    printf("void %d\n", w);
    printf("table %d\n", demo_via_table(5));
    struct sigaction sa;
    sigaction(SIGINT, NULL, &sa);
    printf("sigint_kept %d\n", sa.sa_handler == on_sigint);
    return 0;
}
