# mk/install.mk: make install / make uninstall (included by the Makefile).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=]
#   make uninstall [PREFIX=/usr/local] [DESTDIR=]   (the same values as install)
#   make test-install                               (tests/install/run.sh)
#
# installs, under $(DESTDIR)$(PREFIX):
#   bin/ampc
#   bin/torch2amp                                   (tools/torch2amp; its #! line is $(PYTHON))
#   bin/onnx2amp                                    (tools/onnx2amp; the same #! line)
#   share/ampc/nn.amp                               the standard block library; an installed
#                                                   ampc searches ../share/ampc beside its bin/
#   include/amprt.h, include/amprt/*.h (the kernel families' part headers)
#   lib/libamprt.a
#   lib/libamprt.so.$(AMPC_VERSION)                 soname libamprt.so.$(AMPRT_SOMAJOR)
#   lib/libamprt.so.$(AMPRT_SOMAJOR) -> libamprt.so.$(AMPC_VERSION)
#   lib/libamprt.so -> libamprt.so.$(AMPC_VERSION)
#   lib/pkgconfig/amprt.pc
#   lib/cmake/ampc/ampcConfig.cmake, ampcConfigVersion.cmake
#   share/man/man1/ampc.1
#
# BINDIR, LIBDIR, INCLUDEDIR, MANDIR, PKGCONFIGDIR and CMAKEDIR move one
# kind of file.  DESTDIR only stages: nothing installed records it, so the
# files work once copied to $(PREFIX).  The CMake package finds everything
# relative to its own location, so a staged or moved tree works as it is;
# amprt.pc names $(PREFIX) itself, as pkg-config files do.
#
# uninstall removes those files, lib/cmake/ampc/ and share/ampc/ (the
# directories that are ampc's alone); shared directories such as bin/ stay.
# share/ampc is found by ampc relative to its own bin/, so keep BINDIR
# under PREFIX for imports of nn.amp to find it.
#
# The version has one source, AMPC_VERSION in src/core/core.h.

PREFIX       ?= /usr/local
DESTDIR      ?=
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CMAKEDIR     ?= $(LIBDIR)/cmake/ampc
INSTALL      ?= install
# the interpreter torch2amp's and onnx2amp's #! line names: one that can
# import torch (torch2amp) and onnx (onnx2amp)
PYTHON       ?= /usr/bin/env python3
SHAREDIR     := $(PREFIX)/share/ampc

AMPC_VERSION  := $(shell sed -n 's/^.define AMPC_VERSION "\([^"]*\)".*/\1/p' src/core/core.h)
ifneq ($(words $(subst ., ,$(AMPC_VERSION))),3)
$(error mk/install.mk: no MAJOR.MINOR.PATCH AMPC_VERSION in src/core/core.h (found '$(AMPC_VERSION)'))
endif
# The runtime's soname follows the major version: libamprt.so.0 for 0.x.y.
AMPRT_SOMAJOR := $(firstword $(subst ., ,$(AMPC_VERSION)))
AMPRT_SONAME := libamprt.so.$(AMPRT_SOMAJOR)
AMPRT_REAL   := libamprt.so.$(AMPC_VERSION)

# The installed shared runtime: the same objects as $(BUILD)/libamprt.so,
# linked with its soname.
$(BUILD)/$(AMPRT_REAL): $(RUNTIME_OBJS)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(AMPRT_SONAME) -o $@ $^ -lm -lpthread

# How the CMake package reaches each directory from its own: relative
# (relocatable) when the directory is under PREFIX, else the absolute path.
ampc_slash    = $(subst $(ampc_space),/,$(strip $(1)))
ampc_empty   :=
ampc_space   := $(ampc_empty) $(ampc_empty)
ampc_cmakerel := $(patsubst $(PREFIX)/%,%,$(CMAKEDIR))
ampc_up       := $(call ampc_slash,$(foreach d,$(subst /, ,$(ampc_cmakerel)),..))
ampc_incmake   = $(if $(filter $(PREFIX)/%,$(1)),$${_ampc_prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))
ampc_inpc      = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))
AMPC_PREFIX_CMAKE = $(if $(filter $(PREFIX)/%,$(CMAKEDIR)),$${CMAKE_CURRENT_LIST_DIR}/$(ampc_up),$(PREFIX))

ampc_sed = sed -e 's|@VERSION@|$(AMPC_VERSION)|g' \
	-e 's|@PREFIX@|$(PREFIX)|g' \
	-e 's|@PC_BINDIR@|$(call ampc_inpc,$(BINDIR))|g' \
	-e 's|@PC_LIBDIR@|$(call ampc_inpc,$(LIBDIR))|g' \
	-e 's|@PC_INCLUDEDIR@|$(call ampc_inpc,$(INCLUDEDIR))|g' \
	-e 's|@CMAKE_PREFIX@|$(AMPC_PREFIX_CMAKE)|g' \
	-e 's|@CMAKE_BINDIR@|$(call ampc_incmake,$(BINDIR))|g' \
	-e 's|@CMAKE_LIBDIR@|$(call ampc_incmake,$(LIBDIR))|g' \
	-e 's|@CMAKE_INCLUDEDIR@|$(call ampc_incmake,$(INCLUDEDIR))|g' \
	-e "s|@SIZEOF_VOID_P@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P -x c - | tr -d ' ')|g"

AMPRT_PART_HEADERS := $(wildcard runtime/include/amprt/*.h)

.PHONY: install uninstall test-install

install: $(BUILD)/ampc $(BUILD)/libamprt.a $(BUILD)/$(AMPRT_REAL)
	$(INSTALL) -d '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(INCLUDEDIR)' \
	    '$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(PKGCONFIGDIR)' '$(DESTDIR)$(CMAKEDIR)'
	$(INSTALL) -m 755 $(BUILD)/ampc '$(DESTDIR)$(BINDIR)/ampc'
	$(INSTALL) -d '$(DESTDIR)$(SHAREDIR)'
	$(INSTALL) -m 644 examples/nn.amp '$(DESTDIR)$(SHAREDIR)/nn.amp'
	sed -e '1s|^#!.*|#!$(PYTHON)|' tools/torch2amp > '$(DESTDIR)$(BINDIR)/torch2amp'
	chmod 755 '$(DESTDIR)$(BINDIR)/torch2amp'
	sed -e '1s|^#!.*|#!$(PYTHON)|' tools/onnx2amp > '$(DESTDIR)$(BINDIR)/onnx2amp'
	chmod 755 '$(DESTDIR)$(BINDIR)/onnx2amp'
	$(INSTALL) -m 644 runtime/include/amprt.h '$(DESTDIR)$(INCLUDEDIR)/amprt.h'
	$(INSTALL) -d '$(DESTDIR)$(INCLUDEDIR)/amprt'
	$(INSTALL) -m 644 $(AMPRT_PART_HEADERS) '$(DESTDIR)$(INCLUDEDIR)/amprt/'
	$(INSTALL) -m 644 $(BUILD)/libamprt.a '$(DESTDIR)$(LIBDIR)/libamprt.a'
	$(INSTALL) -m 755 $(BUILD)/$(AMPRT_REAL) '$(DESTDIR)$(LIBDIR)/$(AMPRT_REAL)'
	ln -sf $(AMPRT_REAL) '$(DESTDIR)$(LIBDIR)/$(AMPRT_SONAME)'
	ln -sf $(AMPRT_REAL) '$(DESTDIR)$(LIBDIR)/libamprt.so'
	@echo "sed ... pkgconfig/amprt.pc.in > '$(DESTDIR)$(PKGCONFIGDIR)/amprt.pc'"
	@$(ampc_sed) pkgconfig/amprt.pc.in > '$(DESTDIR)$(PKGCONFIGDIR)/amprt.pc'
	@echo "sed ... cmake/ampcConfig.cmake.in > '$(DESTDIR)$(CMAKEDIR)/ampcConfig.cmake'"
	@$(ampc_sed) cmake/ampcConfig.cmake.in > '$(DESTDIR)$(CMAKEDIR)/ampcConfig.cmake'
	@echo "sed ... cmake/ampcConfigVersion.cmake.in > '$(DESTDIR)$(CMAKEDIR)/ampcConfigVersion.cmake'"
	@$(ampc_sed) cmake/ampcConfigVersion.cmake.in > '$(DESTDIR)$(CMAKEDIR)/ampcConfigVersion.cmake'
	sed -e '/^\.TH /s|"ampc"|"ampc $(AMPC_VERSION)"|' man/ampc.1 > '$(DESTDIR)$(MANDIR)/man1/ampc.1'
	chmod 644 '$(DESTDIR)$(PKGCONFIGDIR)/amprt.pc' '$(DESTDIR)$(CMAKEDIR)/ampcConfig.cmake' \
	    '$(DESTDIR)$(CMAKEDIR)/ampcConfigVersion.cmake' '$(DESTDIR)$(MANDIR)/man1/ampc.1'

uninstall:
	rm -f '$(DESTDIR)$(BINDIR)/ampc' '$(DESTDIR)$(BINDIR)/torch2amp' '$(DESTDIR)$(BINDIR)/onnx2amp' \
	    '$(DESTDIR)$(SHAREDIR)/nn.amp' \
	    '$(DESTDIR)$(INCLUDEDIR)/amprt.h' \
	    $(patsubst runtime/include/%,'$(DESTDIR)$(INCLUDEDIR)/%',$(AMPRT_PART_HEADERS)) \
	    '$(DESTDIR)$(LIBDIR)/libamprt.a' \
	    '$(DESTDIR)$(LIBDIR)/$(AMPRT_REAL)' \
	    '$(DESTDIR)$(LIBDIR)/$(AMPRT_SONAME)' \
	    '$(DESTDIR)$(LIBDIR)/libamprt.so' \
	    '$(DESTDIR)$(PKGCONFIGDIR)/amprt.pc' \
	    '$(DESTDIR)$(CMAKEDIR)/ampcConfig.cmake' \
	    '$(DESTDIR)$(CMAKEDIR)/ampcConfigVersion.cmake' \
	    '$(DESTDIR)$(MANDIR)/man1/ampc.1'
	rmdir '$(DESTDIR)$(CMAKEDIR)' 2>/dev/null || true
	rmdir '$(DESTDIR)$(SHAREDIR)' 2>/dev/null || true
	rmdir '$(DESTDIR)$(INCLUDEDIR)/amprt' 2>/dev/null || true

test-install: $(BUILD)/ampc $(BUILD)/libamprt.a $(BUILD)/$(AMPRT_REAL)
	sh tests/install/run.sh $(BUILD)
