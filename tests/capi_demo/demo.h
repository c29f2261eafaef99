/* The demo library of test_capi_build.py. */
typedef unsigned long long demo_handle;
int demo_add(int a, int *p);
int demo_raise(demo_handle handle);
void *demo_pointer(int n);
int demo_getenv(const char *name);
void demo_void(int *p);
int demo_via_table(int x);
